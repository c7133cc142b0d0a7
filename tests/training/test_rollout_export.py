"""``tmas export rollouts``: one row per solver call whose messages are exactly what the run
sent (checked against what the model received), ``_source`` and ``extra_info`` by mode, runs
without a gold answer skipped with a count, evaluation folders, parquet and JSONL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tmas
from tmas.cli import app
from tmas.storage import open_storage
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.training.data_files import DataFileError, read_rows, write_rows
from tmas.training.rollouts import export_runs

PROBLEM = "What is 9 + 9?"
SEED = 2
ITERATIONS = 3
CONFIG = {
    "n_candidates": 3,
    "n_verifications": 1,
    "max_iterations": ITERATIONS,
    "epsilon": 0.5,
    "seed": SEED,
}


@pytest.fixture
def saved_run(tmp_path: Path) -> tuple[Path, ScriptedChatModel]:
    """A TMAS run with initial, exploit and explore candidates, and the model that served it."""
    model = ScriptedChatModel()
    db = tmp_path / "runs.sqlite"
    tmas.solve(PROBLEM, llm=model, config=CONFIG, db=db, gold="18", run_id="run1")
    return db, model


def export(db: Path, *run_ids: str):
    storage = open_storage(db)
    try:
        return export_runs(storage, run_ids)
    finally:
        storage.close()


def test_rows_carry_the_exact_messages_the_solver_sent(saved_run) -> None:
    db, model = saved_run
    result = export(db, "run1")
    sent = model.solver_calls(SEED, ITERATIONS)
    assert len(result.rows) == len(sent) == 9
    for row in result.rows:
        info = row["extra_info"]
        call = sent[(info["iteration"], info["candidate_index"])]
        system, user = row["prompt"]
        assert (system["role"], user["role"]) == ("system", "user")
        assert system["content"] == call.system
        assert user["content"] == call.user
        assert info["response"] == call.reply
        assert row["reward_model"]["ground_truth"] == "18"


def test_rows_carry_the_prompts_of_a_run_that_overrode_them(tmp_path: Path) -> None:
    """A run made with ``--prompts FILE`` overriding the solver's templates exports the
    messages it sent with them, not today's built-in templates."""
    prompts = tmp_path / "prompts.yaml"
    prompts.write_text(
        "solver/system: You are a terse solver. Box the final answer.\n"
        'solver/initial: "Solve this briefly: {problem}"\n',
        encoding="utf-8",
    )
    home = tmp_path / "home"
    with FakeOpenAIServer() as server:
        solved = CliRunner().invoke(
            app,
            ["solve", PROBLEM, "--gold", "18", "--base-url", server.base_url, "--model",
             "scripted", "--prompts", str(prompts), "-n", "2", "-m", "1", "-t", "1", "--quiet",
             "--run-id", "custom"],
            env={"TMAS_HOME": str(home)},
        )  # fmt: skip
        assert solved.exit_code == 0, solved.output
        sent = [r["messages"] for r in server.requests if r["tmas"]["role"] == "solver"]
    rows = export(home / "runs.sqlite", "custom").rows
    assert len(rows) == len(sent) == 2
    for row, messages in zip(rows, sent, strict=True):
        assert row["prompt"] == [{"role": m["role"], "content": m["content"]} for m in messages]
        assert row["prompt"][0]["content"].startswith("You are a terse solver.")
        assert row["prompt"][1]["content"] == f"Solve this briefly: {PROBLEM}"


def test_source_and_extra_info_follow_the_mode_the_run_used(saved_run) -> None:
    db, model = saved_run
    rows = export(db, "run1").rows
    sources = {row["extra_info"]["mode"]: row["_source"] for row in rows}
    assert sources == {"initial": "normal", "exploit": "experience", "explore": "guideline"}
    sent = model.solver_calls(SEED, ITERATIONS)
    for row in rows:
        info, user = row["extra_info"], row["prompt"][1]["content"]
        assert row["data_source"] == ("math_grm" if row["_source"] == "guideline" else "math")
        if row["_source"] == "experience":
            assert info["experiences"] and info["parent_attempt"]
            assert all(item in user for item in info["experiences"])
            assert info["parent_attempt"] in user
            assert info["guidelines"] == []
        elif row["_source"] == "guideline":
            assert info["guidelines"] and all(g in user for g in info["guidelines"])
            assert info["experiences"] == [] and info["parent_attempt"] == ""
        else:
            assert info["experiences"] == info["guidelines"] == []
            assert user == sent[(info["iteration"], info["candidate_index"])].user
    assert [row["extra_info"]["index"] for row in rows] == list(range(len(rows)))


def test_runs_without_gold_are_skipped_with_a_count(saved_run, tmp_path: Path) -> None:
    db, _ = saved_run
    tmas.solve(PROBLEM, llm=ScriptedChatModel(), config=CONFIG, db=db, run_id="nogold")
    result = export(db, "run1", "nogold")
    assert len(result.rows) == 9 and result.skipped["no gold answer"] == 9
    assert "skipped: 9 no gold answer" in result.describe()
    runner = CliRunner()
    nothing = runner.invoke(
        app, ["export", "rollouts", "nogold", "--db", str(db), "--out", str(tmp_path / "x.jsonl")]
    )
    assert nothing.exit_code == 1 and "nothing to export" in nothing.output
    assert not (tmp_path / "x.jsonl").exists()


def test_cli_writes_parquet_and_jsonl_that_read_back(saved_run, tmp_path: Path) -> None:
    db, _ = saved_run
    runner = CliRunner()
    for name in ("rows.parquet", "rows.jsonl"):
        path = tmp_path / name
        result = runner.invoke(app, ["export", "rollouts", "run1", "--db", str(db), "--out", path])
        assert result.exit_code == 0, result.output
        assert "9 row(s) from 1 run(s)" in result.output
        rows = read_rows(path)
        assert rows == export(db, "run1").rows
    import pyarrow.parquet as pq

    columns = set(pq.read_schema(tmp_path / "rows.parquet").names)
    assert {"prompt", "data_source", "ability", "reward_model", "extra_info", "_source"} <= columns


def test_an_evaluation_folder_exports_all_its_runs(tmp_path: Path) -> None:
    db, out = tmp_path / "runs.sqlite", tmp_path / "eval"
    problems = [
        {"id": "a", "problem": "9 + 9?", "answer": "18"},
        {"id": "b", "problem": "10 + 8?", "answer": "18"},
    ]
    tmas.evaluate(problems, llm=ScriptedChatModel(), config=CONFIG, db=db, out_dir=out)
    result = CliRunner().invoke(
        app, ["export", "rollouts", str(out), "--db", str(db), "--out", tmp_path / "e.jsonl"]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert len(rows) == 18 and len({row["extra_info"]["run_id"] for row in rows}) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "no run with id 'nope'"),
        (["run1", "--out", "{tmp}/rows.csv"], "expected a .parquet or .jsonl file"),
    ],
)
def test_bad_export_requests_fail_in_one_line(saved_run, tmp_path: Path, args, message) -> None:
    db, _ = saved_run
    args = [arg.format(tmp=tmp_path) for arg in args]
    if "--out" not in args:
        args = [*args, "--out", str(tmp_path / "rows.jsonl")]
    result = CliRunner().invoke(
        app, ["export", "rollouts", *args, "--db", str(db)], catch_exceptions=False
    )
    assert result.exit_code == 2 and message in result.output
    assert list(tmp_path.glob("rows.*")) == []


def test_training_files_without_the_needed_columns_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    write_rows([{"prompt": [{"role": "user", "content": "1+1?"}], "_source": "other"}], path)
    with pytest.raises(DataFileError, match="row 1: _source 'other' is not one of"):
        read_rows(path)
    path.write_text("not json\n")
    with pytest.raises(DataFileError, match="line 1 is not JSON"):
        read_rows(path)


def test_rows_are_read_in_one_shape_and_guideline_rows_need_their_bank(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    chat = [{"role": "user", "content": "3 + 4?"}]
    write_rows(
        [
            {"prompt": chat, "_source": "normal", "reward_model": {"ground_truth": 7}},
            {"prompt": chat, "_source": "experience", "reward_model": {"ground_truth": "7"},
             "extra_info": {"problem": "3 + 4?", "experiences": ["Add."]}},
        ],
        path,
    )  # fmt: skip
    rows = read_rows(path)
    assert [row["reward_model"]["ground_truth"] for row in rows] == ["7", "7"]
    assert rows[0]["extra_info"] == {"problem": "", "guidelines": [], "experiences": []}
    unshown = {"prompt": chat, "_source": "guideline", "reward_model": {"ground_truth": 7}}
    write_rows([unshown], path)
    with pytest.raises(DataFileError, match="a guideline row needs extra_info.guidelines"):
        read_rows(path)
