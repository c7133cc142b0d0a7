"""``tmas study --only``: a subset of a study's conditions runs in the study's folder, the full
file rerun there keeps those runs, and a subset that cannot stand alone is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import invoke, one_line
from tests.eval.test_study import run_study, study_document, write_study
from tmas.eval.study_file import StudyError
from tmas.eval.study_loading import load_study
from tmas.testing.fake_openai_server import FakeOpenAIServer


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer() as running:
        yield running


def three_conditions() -> dict:
    document = study_document(
        self_consistency=False,
        pilot={"problems": 1},
        problems={"data": "gsm8k", "limit": 2},
        contrasts=[["rsa", "vote"], ["tmas", "vote"]],
    )
    document["conditions"]["vote"] = {"graph": "majority_vote", "settings": {"n_candidates": 2}}
    return document


def test_only_runs_the_named_conditions_and_the_full_file_keeps_their_runs(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    path, out = write_study(tmp_path, three_conditions()), tmp_path / "out"
    subset = run_study(tmp_path, path, out, server, "--only", "tmas,vote")
    assert subset.exit_code == 0, subset.output
    report = json.loads((out / "report.json").read_text())
    assert list(report["conditions"]) == ["tmas", "vote"]
    assert [(c["baseline"], c["treated"]) for c in report["contrasts"]] == [("tmas", "vote")]
    assert sorted(p.name for p in (out / "conditions").iterdir()) == ["tmas", "vote"]
    assert "--only=tmas,vote" in json.loads((out / "design.json").read_text())["command"]
    results = {
        name: (out / "conditions" / name / "seed-0" / "results.jsonl").read_bytes()
        for name in ("tmas", "vote")
    }

    full = run_study(tmp_path, path, out, server)
    assert full.exit_code == 0, full.output
    report = json.loads((out / "report.json").read_text())
    assert list(report["conditions"]) == ["tmas", "rsa", "vote"]
    assert len(report["contrasts"]) == 2
    for name, saved in results.items():
        assert (out / "conditions" / name / "seed-0" / "results.jsonl").read_bytes() == saved


@pytest.mark.parametrize(
    ("only", "message"),
    [
        ("tmas,nope", "--only nope: name conditions of the study (tmas, rsa, vote)"),
        ("rsa", "--only leaves out the reference 'tmas'"),
        (",", "--only : name conditions of the study"),
    ],
)
def test_a_subset_that_cannot_stand_alone_exits_2_and_says_what_to_name(
    tmp_path: Path, only: str, message: str
) -> None:
    path = write_study(tmp_path, three_conditions())
    result = invoke(tmp_path, "study", str(path), "--out", str(tmp_path / "o"), "--only", only)
    assert result.exit_code == 2, result.output
    assert message in one_line(result.output)
    assert not (tmp_path / "o").exists()


def test_only_applies_after_the_settings_so_another_reference_can_be_chosen(
    tmp_path: Path,
) -> None:
    path = write_study(tmp_path, three_conditions())
    study = load_study(path, {"reference": "rsa"}, only=["rsa", "vote"])
    assert list(study.conditions) == ["rsa", "vote"] and study.contrasts == [("rsa", "vote")]


def test_a_training_condition_needs_the_condition_it_starts_from(tmp_path: Path) -> None:
    document = three_conditions()
    train = {"kind": "grpo", "settings": {"data": "rows.jsonl"}}
    document["conditions"]["warm"] = {"train": {"kind": "sft", "settings": {"data": "r.jsonl"}}}
    document["conditions"]["rl"] = {"train": {**train, "warm_start": "warm"}}
    path = write_study(tmp_path, document)
    with pytest.raises(StudyError, match="rl trains from warm's adapter: name warm too"):
        load_study(path, only=["tmas", "rl"])
    assert list(load_study(path, only=["tmas", "warm", "rl"]).conditions) == [
        "tmas",
        "warm",
        "rl",
    ]
