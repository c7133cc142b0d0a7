"""The command line: clear refusals of bad input that leave the run database untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import PROBLEM, RUN_ID, db_path, digest, invoke, make_home, one_line, run_ids

from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.manager import RunManager
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel, ScriptedReplies


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A TMAS_HOME whose database holds one finished run made with a scripted model."""
    return make_home(tmp_path)


BAD_INPUT = [
    (["solve", "  "], "the problem is empty"),
    (["solve", PROBLEM, "-n", "0"], "n_candidates"),
    (["solve", PROBLEM, "--epsilon", "2"], "epsilon"),
    (["solve", PROBLEM, "-m", "0"], "n_verifications"),
    (["solve", PROBLEM, "-t", "0"], "max_iterations"),
    (["solve", PROBLEM, "--role-model", "badformat"], "expected ROLE=MODEL, got 'badformat'"),
    (["solve", PROBLEM, "--role-model", "verifier="], "expected ROLE=MODEL"),
    (["solve", PROBLEM, "--role-model", "bogus=m"], "unknown role 'bogus'"),
    (["solve", PROBLEM, "--role-model", "solver=m"], "the solver uses the main model"),
    (["solve", PROBLEM, "--run-id", RUN_ID], f"a run with id '{RUN_ID}' already exists"),
    (["resume", "no-such-run"], "no run with id 'no-such-run'"),
    (["show", "no-such-run"], "no run with id 'no-such-run'"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INPUT, ids=lambda v: " ".join(v)[:40])
def test_bad_input_is_refused_and_changes_nothing(
    home: Path, args: list[str], message: str
) -> None:
    db = db_path(home)
    before = digest(db)
    result = invoke(home, *args)

    assert result.exit_code != 0
    assert "error:" in result.stderr
    assert message in one_line(result.stderr)
    assert "Traceback" not in result.output
    assert digest(db) == before
    assert run_ids(db) == [RUN_ID]


@pytest.mark.parametrize(
    "args",
    [
        ["solve", "  "],
        ["solve", PROBLEM, "-n", "0"],
        ["solve", PROBLEM, "--epsilon", "2"],
        ["solve", PROBLEM, "--role-model", "badformat"],
    ],
)
def test_bad_solve_input_creates_no_database(tmp_path: Path, args: list[str]) -> None:
    result = invoke(tmp_path, *args)
    assert result.exit_code == 2
    assert not db_path(tmp_path).exists()


def test_runs_lists_the_run(home: Path) -> None:
    result = invoke(home, "runs")
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if RUN_ID in line)
    assert "18" in row
    assert "2/2" in row
    assert "finished" in row


@pytest.mark.parametrize("columns", ["80", "100"])
def test_runs_never_cuts_a_run_id(tmp_path: Path, columns: str) -> None:
    long_id = "eval-3f2a9c1d-gsm8k-test-1171"
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("1234567890" * 4,)))
    manager = RunManager(
        connect(db_path(tmp_path)),
        router_factory=lambda plan: ModelRouter(model),
    )
    manager.start(
        long_id,
        problem="A long problem statement " * 10,
        gold_answer=None,
        plan=plan_run(
            load_bundled("tmas"),
            TMASConfig(n_candidates=1, n_verifications=1, max_iterations=1),
            BackendSpec(),
        ),
        show_progress=False,
    )
    result = invoke(tmp_path, "runs", env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    assert long_id in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= int(columns)


def test_show_prints_the_run(home: Path) -> None:
    result = invoke(home, "show", RUN_ID)
    assert result.exit_code == 0, result.output
    assert f"problem: {PROBLEM}" in result.stdout
    assert "status: finished" in result.stdout
    assert f"run {RUN_ID}: answer 18" in result.stdout


def test_show_json(home: Path) -> None:
    result = invoke(home, "show", RUN_ID, "--json")
    assert result.exit_code == 0, result.output
    body = result.stdout[result.stdout.index("{") :]
    shown = json.loads(body)
    assert shown["run_id"] == RUN_ID
    assert shown["final_answer"] == "18"
    assert shown["stop_reason"] == "max_iterations"
    assert len(shown["history"]) == 2
    assert shown["usage"]["solver"]["calls"] == 4


def test_resume_of_a_finished_run_prints_it_and_calls_no_model(home: Path) -> None:
    db = db_path(home)
    result = invoke(home, "resume", RUN_ID)
    assert result.exit_code == 0, result.output
    assert f"run {RUN_ID}: answer 18" in result.stdout
    assert run_ids(db) == [RUN_ID]


def test_backend_without_its_endpoint_is_refused_without_saving_a_run(home: Path) -> None:
    # An openai backend without --base-url/--model cannot work; resume cannot fix the saved
    # backend settings, so the run must not be registered in the first place.
    db = db_path(home)
    before = digest(db)
    result = invoke(home, "solve", PROBLEM, "--backend", "openai", "--run-id", "r2")

    assert result.exit_code != 0
    assert "needs --base-url and --model" in one_line(result.stderr)
    assert run_ids(db) == [RUN_ID]
    assert digest(db) == before
