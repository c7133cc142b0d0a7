"""``tmas study`` against the scripted OpenAI-compatible server: the pilot, the self-consistency
control matched to the reference's tokens, the interleaved order, the report with paired
intervals and plots, resuming, refusing a changed condition, deduplication and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli_helpers import invoke, one_line
from tmas.eval.study import Study
from tmas.eval.study_loading import load_study, parse_study
from tmas.eval.study_report import report_study
from tmas.testing.fake_openai_server import FakeOpenAIServer


def study_document(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "name": "wiring",
        "reference": "tmas",
        "problems": {"data": "gsm8k", "limit": 3},
        "backend": {"kind": "openai", "model": "scripted", "base_url": "http://127.0.0.1:9/v1"},
        "conditions": {
            "tmas": {"settings": {"n_candidates": 2, "n_verifications": 1, "max_iterations": 2}},
            "rsa": {"graph": "rsa", "settings": {"n_candidates": 2, "max_iterations": 2}},
        },
        "self_consistency": {"pilot_width": 2},
        "pilot": {"problems": 2},
    }
    document.update(changes)
    return document


def write_study(folder: Path, document: dict[str, Any]) -> Path:
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer() as running:
        yield running


def run_study(home: Path, path: Path, out: Path, server: FakeOpenAIServer, *extra: str):
    return invoke(
        home,
        "study",
        str(path),
        "--out",
        str(out),
        "--quiet",
        "--set",
        f"backend.base_url={server.base_url}",
        *extra,
    )


def test_a_study_matches_self_consistency_to_the_reference_and_reports_paired_intervals(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    document = study_document()
    document["conditions"]["pacore"] = {
        "graph": "pacore",
        "match_tokens": {"setting": "round_widths", "shape": ["w", "w", 1], "pilot_widths": [1, 2]},
    }
    path = write_study(tmp_path, document)
    out = tmp_path / "out"
    planned = run_study(tmp_path, path, out, server, "--plan")
    assert planned.exit_code == 0, planned.output
    text = one_line(planned.output)
    assert "self_consistency, width" in text and "expected 95% interval +/-" in text
    assert "TOO SMALL to tell 10 points" in text  # 3 problems cannot tell 10 points
    plan = json.loads((out / "plan.json").read_text())
    width = plan["conditions"]["self_consistency"]["matched"]["width"]
    assert width > 2  # TMAS at N=2, M=1, T=2 spends more than two samples

    ran = run_study(tmp_path, path, out, server)
    assert ran.exit_code == 0, ran.output
    report = json.loads((out / "report.json").read_text())
    conditions = report["conditions"]
    assert list(conditions) == ["tmas", "rsa", "pacore", "self_consistency"]
    sc = conditions["self_consistency"]
    assert sc["settings"] == {"n_candidates": width}
    assert abs(sc["tokens_vs_reference"] - 1.0) <= 0.10, sc["tokens_vs_reference"]
    # PaCoRe's tokens grow with the square of its width: the fit through widths 1 and 2 still
    # lands a wider one within 10%
    pacore = conditions["pacore"]
    assert pacore["matched"]["width"] > 2, pacore["matched"]
    assert abs(pacore["tokens_vs_reference"] - 1.0) <= 0.10, pacore["tokens_vs_reference"]
    for name in ("rsa", "pacore", "self_consistency"):
        diff = conditions[name]["difference"]
        assert diff["interval"][0] <= diff["value"] <= diff["interval"][1]
        assert diff["pairs"] == 3 and 0 <= diff["differ"] <= 3
        assert f"{diff['differ']}/3 differ" in (out / "report.md").read_text()
    assert "difference" not in conditions["tmas"]
    for name, figures in conditions.items():
        low, high = figures["accuracy_interval"]
        assert 0.0 <= low <= figures["accuracy"] <= high <= 1.0, name
        assert figures["mean_tokens"] > 0 and figures["mean_calls"] > 0
    markdown = (out / "report.md").read_text()
    assert f"--out {out}" in markdown and "| self_consistency | majority_vote |" in markdown
    assert "within 10%" in markdown
    assert (out / "pareto.png").stat().st_size > 0 and (out / "iterations.png").exists()
    design = json.loads((out / "design.json").read_text())
    assert design["widths"]["self_consistency"]["width"] == width
    assert design["plans"]["self_consistency"]["config"]["n_candidates"] == width
    summary = json.loads(
        (out / "conditions" / "self_consistency" / "seed-0" / "summary.json").read_text()
    )
    assert summary["problems"] == 3 and summary["config"]["n_candidates"] == width

    compared = invoke(tmp_path, "compare", str(out))
    assert compared.exit_code == 0 and "# Study: wiring" in compared.output

    before = len(server.requests)
    again = run_study(tmp_path, path, out, server)
    assert again.exit_code == 0, again.output
    assert len(server.requests) == before  # every run was finished: nothing is asked again


def test_a_changed_condition_is_refused_and_the_saved_results_stay(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    document = study_document(
        self_consistency=False, pilot={"problems": 1}, problems={"data": "gsm8k", "limit": 1}
    )
    path, out = write_study(tmp_path, document), tmp_path / "out"
    assert run_study(tmp_path, path, out, server).exit_code == 0
    results = out / "conditions" / "rsa" / "seed-0" / "results.jsonl"
    saved = results.read_bytes()
    changed = run_study(
        tmp_path, path, out, server, "--set", "conditions.rsa.settings.n_candidates=3"
    )
    assert changed.exit_code == 2
    assert "other settings" in one_line(changed.output) or "n_candidates" in changed.output
    assert results.read_bytes() == saved


def test_problems_are_interleaved_across_conditions_and_seeds_pair_up(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    document = study_document(self_consistency=False, seeds=[0, 1], pilot={"problems": 1})
    study = parse_study(document, tmp_path, {"backend.base_url": server.base_url})
    order: list[tuple[str, str]] = []
    runner = Study(
        study, tmp_path / "out", on_row=lambda label, row: order.append((label, row["id"]))
    )
    report = report_study(runner)
    ids = [f"gsm8k-test-{i}" for i in range(3)]
    pilot = [("tmas", ids[0]), ("rsa", ids[0])]
    main = order[len(pilot) :]
    assert order[: len(pilot)] == pilot
    # problem by problem, each seed's conditions in turn, the order turning with the problem
    assert [problem for _, problem in main[::4]] == [ids[0], ids[1], ids[2]]
    assert main[4:8] == [
        ("rsa/seed-0", ids[1]),
        ("tmas/seed-1", ids[1]),
        ("rsa/seed-1", ids[1]),
        ("tmas/seed-0", ids[1]),
    ]
    tmas = report["conditions"]["tmas"]
    assert [len(seeds) for seeds in tmas["scores"]] == [2, 2, 2]


def test_copies_of_training_problems_are_left_out_and_counted(tmp_path: Path) -> None:
    held_out = [
        "Ann has 3 cats and 4 dogs. How many pets does she have in all?",
        "A train travels 120 km in 2 hours. What is its speed in km per hour?",
        "Tom buys 5 pens at $2 each and 3 books at $7 each. How much does he spend?",
        "Sara reads 12 pages a day for 6 days. How many pages does she read?",
        "A box holds 1,200 nails. How many boxes hold 6,000 nails?",
    ]
    training = [
        held_out[0],  # exact
        "a TRAIN travels 120 km in 2 hours.  what is its speed in km per hour",  # normalised
        "Bob buys 5 pens at $2 each and 3 books at $7 each. How much does he spend?",  # near
        "Sara reads 10 pages a day for 6 days. How many pages does she read?",  # other numbers
    ]

    def write(name: str, texts: list[str]) -> None:
        rows = [{"id": f"{name[0]}{i}", "problem": t, "answer": "1"} for i, t in enumerate(texts)]
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))

    write("held.jsonl", held_out)
    write("train.jsonl", training)
    document = study_document(problems={"data": "held.jsonl", "dedupe_against": ["train.jsonl"]})
    problems, overlap = Study(parse_study(document, tmp_path), tmp_path / "out").problems()
    assert (overlap.exact, overlap.normalised, overlap.near) == (["h0"], ["h1"], ["h2"])
    assert [p.id for p in problems] == ["h3", "h4"]
    assert overlap.record()["near"] == 1


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"reference": "nope"}, "reference 'nope' is not one of the conditions"),
        ({"conditions": {"tmas": {"grpah": "tmas"}}}, "conditions.tmas.grpah"),
        ({"problems": {"data": "missing.jsonl"}}, "no such data file"),
        ({"conditions": {"tmas": {"settings": {"seed": 3}}}}, "seeds are the study's"),
        ({"conditions": {"tmas": {"graph": "no_such_topology"}}}, "no_such_topology"),
        ({"seeds": [1, 1]}, "seeds: a non-empty list without repeats"),
    ],
)
def test_bad_study_files_fail_with_a_clear_message_and_exit_2(
    tmp_path: Path, server: FakeOpenAIServer, changes: dict[str, Any], message: str
) -> None:
    path = write_study(tmp_path, study_document(**changes))
    result = run_study(tmp_path, path, tmp_path / "out", server, "--plan")
    assert result.exit_code == 2, result.output
    assert message in one_line(result.output)


def test_toy_needs_a_toy_section(tmp_path: Path) -> None:
    path = write_study(tmp_path, study_document())
    result = invoke(tmp_path, "study", str(path), "--out", str(tmp_path / "o"), "--toy")
    assert result.exit_code == 2 and "no toy: section" in one_line(result.output)


def test_the_shipped_gpu_study_runs_at_toy_size_against_the_scripted_server(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "studies" / "gpu_paper.yaml"
    study = load_study(path)
    assert (
        study.conditions["tmas"].settings["n_candidates"],
        study.conditions["tmas"].settings["n_verifications"],
    ) == (8, 8)
    out = tmp_path / "gpu"
    planned = run_study(tmp_path, path, out, server, "--toy", "--plan")
    assert planned.exit_code == 0, planned.output
    assert "estimated wall in all" in planned.output
    ran = run_study(tmp_path, path, out, server, "--toy")
    assert ran.exit_code == 0, ran.output
    report = json.loads((out / "report.json").read_text())
    assert set(report["conditions"]) == {"tmas", "pacore", "rse", "rsa", "self_consistency"}
    assert all("difference" in c for n, c in report["conditions"].items() if n != "tmas")


@pytest.mark.slow
def test_the_shipped_cpu_study_runs_at_toy_size_on_the_embedded_model(tmp_path: Path) -> None:
    """The real path: the CPU study's file, at its toy size, on the embedded SmolLM2."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "studies" / "cpu_gsm8k.yaml"
    out = tmp_path / "cpu"
    ran = invoke(tmp_path, "study", str(path), "--out", str(out), "--toy", "--quiet")
    assert ran.exit_code == 0, ran.output
    report = json.loads((out / "report.json").read_text())
    assert report["engine"].startswith("llamacpp:smollm2")
    assert report["problems"] == 2
    conditions = report["conditions"]
    assert set(conditions) == {"tmas", "pacore", "self_consistency"}
    for name, figures in conditions.items():
        assert figures["mean_tokens"] > 0 and figures["failed"] == 0, name
    assert conditions["self_consistency"]["matched"]["width"] >= 1


def test_a_rerun_keeps_every_results_row_and_its_wall_time(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    document = study_document(pilot={"problems": 1})
    path, out = write_study(tmp_path, document), tmp_path / "out"
    assert run_study(tmp_path, path, out, server).exit_code == 0
    results = out / "conditions" / "tmas" / "seed-0" / "results.jsonl"
    walls = [json.loads(line)["wall_s"] for line in results.read_text().splitlines()]
    design = (out / "design.json").read_text()
    assert run_study(tmp_path, path, out, server).exit_code == 0
    again = [json.loads(line)["wall_s"] for line in results.read_text().splitlines()]
    assert again == walls and len(walls) == 3 and None not in walls
    assert (out / "design.json").read_text() == design


def test_a_study_stopped_by_an_unknown_model_accepts_the_corrected_model(
    tmp_path: Path,
) -> None:
    document = study_document(self_consistency=False, pilot={"problems": 1})
    with FakeOpenAIServer(served_models=("scripted",)) as server:
        path, out = write_study(tmp_path, document), tmp_path / "out"
        wrong = run_study(tmp_path, path, out, server, "--set", "backend.model=wrong")
        assert wrong.exit_code == 1 and "study stopped" in one_line(wrong.output)
        fixed = run_study(tmp_path, path, out, server)
        assert fixed.exit_code == 0, fixed.output
    report = json.loads((out / "report.json").read_text())
    assert report["engine"].startswith("openai:scripted")


@pytest.mark.parametrize(
    ("changes", "extra", "message"),
    [
        ({"toy": [1]}, ("--toy",), "overrides (toy:, --set) are a mapping"),
        (
            {
                "conditions": {"tmas": {"match_tokens": {"shape": [0, 2]}}, "r": {}},
                "reference": "r",
            },
            (),
            "shape: rounds as widths of at least 1, with w",
        ),
        ({}, ("--set", "backend=[1]"), "backend: Input should be a valid dictionary"),
    ],
)
def test_bad_overrides_and_shapes_are_refused(
    tmp_path: Path, changes: dict[str, Any], extra: tuple[str, ...], message: str
) -> None:
    path = write_study(tmp_path, study_document(**changes))
    result = invoke(tmp_path, "study", str(path), "--out", str(tmp_path / "o"), *extra)
    assert result.exit_code == 2, result.output
    assert message in one_line(result.output)


def test_study_settings_on_the_command_line_are_yaml(tmp_path: Path, server: FakeOpenAIServer):
    document = study_document(
        backend={"kind": "llamacpp"},
        self_consistency=False,
        pilot={"problems": 1},
        problems={"data": "gsm8k", "limit": 1},
    )
    path = write_study(tmp_path, document)
    backend = f"{{kind: openai, model: scripted, base_url: '{server.base_url}'}}"
    result = invoke(
        tmp_path,
        "study",
        str(path),
        "--out",
        str(tmp_path / "o"),
        "--quiet",
        "--set",
        f"backend={backend}",
    )
    assert result.exit_code == 0, result.output
    assert "Engine (all conditions): openai:scripted" in one_line(result.output)
