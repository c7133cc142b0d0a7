"""Evaluation: data loading, one saved run per problem, rerun skips finished problems and
resumes the rest, the results schema, and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tmas.cli import app
from tmas.config import TMASConfig
from tmas.eval.data import DataError, load_problems
from tmas.eval.evaluation import RESULTS, SUMMARY, Evaluation
from tmas.eval.identity import EvaluationMismatch
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer

ROW_KEYS = {
    "id",
    "problem",
    "run_id",
    "graph",
    "gold",
    "status",
    "error",
    "selected_answer",
    "selection",
    "correct",
    "majority_answer",
    "majority_correct",
    "answers",
    "pass_at_1",
    "pass_at_1_answered",
    "lost_roles",
    "failed_calls_by_role",
    "fatal",
    "usage",
    "llm_calls",
    "failed_calls",
    "tokens_in",
    "tokens_out",
    "wall_s",
}
CONFIG = TMASConfig(n_candidates=2, n_verifications=1, max_iterations=2, max_retries=0)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_samples_ship_with_the_package() -> None:
    assert len(load_problems("gsm8k")) == 20 and len(load_problems("math500")) == 20
    assert load_problems("math500", limit=1)[0].answer


def test_csv_and_jsonl_load_alike(tmp_path: Path) -> None:
    rows = [{"id": 1, "problem": "1+1?", "answer": 2}, {"id": 2, "problem": "2+2?", "answer": 4}]
    jsonl = write_jsonl(tmp_path / "d.jsonl", rows)
    csv_path = tmp_path / "d.csv"
    csv_path.write_text("id,problem,answer\n1,1+1?,2\n2,2+2?,4\n", encoding="utf-8")
    assert load_problems(str(jsonl)) == load_problems(str(csv_path))
    assert load_problems(str(jsonl))[0].answer == "2"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"id": "a", "problem": "x"}\n', "row 1: missing or bad answer"),
        (b'{"id": "a", "problem": "  ", "answer": "1"}\n', "row 1: empty problem"),
        (b'{"id": "a", "problem": "x", "answer": "1"}\n' * 2, "duplicate ids a"),
        (b"\xff\xfe not utf-8 \x80\n", "cannot read"),
        (b"{not json\n", "cannot read"),
    ],
)
def test_bad_data_is_refused_with_the_reason(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(DataError, match=message):
        load_problems(str(path))


def test_unknown_format_and_missing_file_are_named(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="unknown data format"):
        (tmp_path / "d.txt").write_text("x")
        load_problems(str(tmp_path / "d.txt"))
    with pytest.raises(DataError, match="no such data file"):
        load_problems(str(tmp_path / "none.jsonl"))


def evaluation(
    tmp_path: Path, model: ScriptedChatModel, concurrency: int = 2, config: TMASConfig = CONFIG
) -> Evaluation:
    return Evaluation(
        problems=load_problems("gsm8k", limit=3),
        plan=plan_run(
            load_bundled("tmas"),
            config,
            BackendSpec(kind="openai", base_url="http://unused/v1", model="scripted"),
        ),
        router=ModelRouter(model),
        db=tmp_path / "runs.sqlite",
        out_dir=tmp_path / "out",
        concurrency=concurrency,
    )


def test_rerun_skips_finished_problems_and_finishes_the_failed_one(tmp_path: Path) -> None:
    per_problem = CONFIG.calls_per_iteration() * CONFIG.max_iterations
    # Problems run one after another, each making N=2 solver calls per iteration: every solver
    # call of the second problem's second iteration fails, which stops that run.
    flaky = ScriptedChatModel(fail_when=lambda role, n: role == "solver" and n in (7, 8))
    first = evaluation(tmp_path, flaky, concurrency=1).run()
    assert (first["finished"], first["failed"]) == (2, 1)
    rows = [json.loads(line) for line in (tmp_path / "out" / RESULTS).read_text().splitlines()]
    assert [r["status"] for r in rows].count("failed") == 1
    failed = next(r for r in rows if r["status"] == "failed")
    assert "every solver call of iteration 2 failed" in failed["error"]
    assert "scripted failure of solver call 8" in failed["error"]
    assert failed["failed_calls"] == 2

    healthy = ScriptedChatModel()
    second = evaluation(tmp_path, healthy).run()
    assert (second["finished"], second["failed"]) == (3, 0)
    # Only the failed problem ran again, and only its unfinished part.
    assert 0 < sum(healthy.calls.values()) < per_problem
    rows = [json.loads(line) for line in (tmp_path / "out" / RESULTS).read_text().splitlines()]
    assert [r["id"] for r in rows] == [p.id for p in load_problems("gsm8k", limit=3)]
    assert all(set(r) == ROW_KEYS and r["status"] == "finished" for r in rows)
    assert all(r["llm_calls"] == per_problem and len(r["pass_at_1"]) == 2 for r in rows)
    assert [r["failed_calls"] for r in rows] == [0, 2, 0]  # kept across the resume
    summary = json.loads((tmp_path / "out" / SUMMARY).read_text())
    assert summary["finished"] == 3 and len(summary["pass_at_1_per_iteration"]) == 2

    third = ScriptedChatModel()
    evaluation(tmp_path, third).run()
    assert sum(third.calls.values()) == 0  # everything finished: nothing runs again


def test_cli_eval_runs_and_reruns(tmp_path: Path) -> None:
    runner = CliRunner()
    with FakeOpenAIServer() as server:
        args = [
            "eval",
            "--out",
            str(tmp_path / "out"),
            "--data",
            "gsm8k",
            "--limit",
            "3",
            "--concurrency",
            "2",
            "--base-url",
            server.base_url,
            "--model",
            "scripted",
            "-n",
            "2",
            "-m",
            "1",
            "-t",
            "1",
            "--db",
            str(tmp_path / "runs.sqlite"),
        ]
        first = runner.invoke(app, args)
        served = server.request_count
        second = runner.invoke(app, args)
        assert server.request_count == served  # the rerun skipped every finished problem
    assert first.exit_code == 0, first.output
    assert second.exit_code == 0, second.output
    assert "selected-answer accuracy" in first.stdout and "Pass@1, iteration 1" in first.stdout
    assert served == 3 * TMASConfig(n_candidates=2, n_verifications=1).calls_per_iteration()


def test_cli_eval_bad_data_exits_non_zero(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["eval", "--out", str(tmp_path / "o"), "--data", str(tmp_path / "none.jsonl")]
    )
    assert result.exit_code == 2
    assert "no such data file" in result.output


def test_compare_prints_one_row_per_evaluation_and_writes_plots(tmp_path: Path) -> None:
    for name, model in (("first", ScriptedChatModel()), ("second", ScriptedChatModel())):
        run = evaluation(tmp_path, model)
        run.out_dir = tmp_path / name
        run.run()
    result = CliRunner().invoke(
        app,
        [
            "compare",
            str(tmp_path / "first"),
            str(tmp_path / "second"),
            "--plots",
            str(tmp_path / "plots"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "first" in result.stdout and "second" in result.stdout
    for name in ("accuracy_vs_iteration.png", "accuracy_vs_tokens.png"):
        assert (tmp_path / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_refuses_a_folder_without_a_summary(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["compare", str(tmp_path)])
    assert result.exit_code == 2 and "no readable evaluation summary" in result.output


def test_a_results_line_cut_short_by_a_kill_is_ignored_on_rerun(tmp_path: Path) -> None:
    run = evaluation(tmp_path, ScriptedChatModel())
    run.run()
    results = tmp_path / "out" / RESULTS
    results.write_text(results.read_text() + '{"id": "gsm8k-te', encoding="utf-8")
    again = ScriptedChatModel()
    summary = evaluation(tmp_path, again).run()
    assert summary["finished"] == 3 and sum(again.calls.values()) == 0
    assert len(results.read_text().splitlines()) == 3


def test_a_rerun_with_other_settings_does_not_continue_the_saved_runs(tmp_path: Path) -> None:
    model = ScriptedChatModel()
    evaluation(tmp_path, model).run()
    calls = sum(model.calls.values())
    before = (tmp_path / "out" / RESULTS).read_text()
    more = CONFIG.model_copy(update={"n_candidates": CONFIG.n_candidates + 1})
    changed = evaluation(tmp_path, model, config=more)
    with pytest.raises(EvaluationMismatch, match="config.n_candidates: 2 -> 3"):
        changed.run()
    assert sum(model.calls.values()) == calls  # no saved run was continued with the new settings
    assert (tmp_path / "out" / RESULTS).read_text() == before
