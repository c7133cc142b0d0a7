"""What no retry can fix stops the run at once: a rejected API key, an unknown model, a prompt
that cannot fit the context. The message names the role, the model and the cause; the run
stays resumable and resumes once the cause is fixed. A run that loses every call of a role
finishes degraded, not as a success."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tmas.api import build_graph
from tmas.cli import app
from tmas.cli.outcome import DEGRADED_EXIT
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import saved_plan
from tmas.lifecycle.run_status import finished_status
from tmas.llm.errors import ContextOverflowError, ModelCallError, fatal_cause
from tmas.llm.router import ModelRouter
from tmas.state import lost_roles
from tmas.storage.run_registry import RunRegistry
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.fault_server import FaultInjectingServer

PROBLEM = "What is 9 + 9?"
SIZES = ["-n", "2", "-m", "2", "-t", "2", "--set", "max_retries=2"]


def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


def solve(db: Path, main: FakeOpenAIServer, *extra: str, env: dict[str, str]) -> Result:
    return cli(
        "solve", PROBLEM, "--base-url", main.base_url, "--model", "scripted",
        "--db", str(db), "--run-id", "r1", "--quiet", *SIZES, *extra, env=env,
    )  # fmt: skip


def status_of(db: Path, run_id: str = "r1") -> str:
    conn = connect(db)
    try:
        return RunRegistry(conn).get(run_id).status
    finally:
        conn.close()


def test_a_rejected_key_stops_the_run_at_once_and_resume_finishes_it(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    with FakeOpenAIServer() as main, FakeOpenAIServer(api_key="secret") as judge:
        wrong = {"TMAS_API_KEY": "wrong"}
        first = solve(db, main, "--role-base-url", f"verifier={judge.base_url}", env=wrong)
        assert first.exit_code == 1, first.output
        line = first.output.split("error:")[1].splitlines()[0]
        assert f"verifier model 'scripted' at {judge.base_url}" in line
        assert "the endpoint rejected the API key (HTTP 401)" in line
        assert "tmas resume r1" in first.output
        # at once: no retry, nothing after the first verification stage
        assert judge.refused and set(judge.refused) == {401} and len(judge.refused) <= 4
        assert main.request_count == 2  # the two solver calls of iteration 1, nothing more
        assert status_of(db) == "failed"

        fixed = cli("resume", "r1", "--db", str(db), "--quiet", env={"TMAS_API_KEY": "secret"})
        assert fixed.exit_code == 0, fixed.output
        solver_calls = [r for r in main.requests if r["tmas"]["role"] == "solver"]
        assert len(solver_calls) == 4  # 2 per iteration: none of iteration 1 made again
        assert judge.request_count == 2 * 2 * 2
        assert status_of(db) == "finished"


def test_an_unknown_role_model_stops_the_run_and_a_corrected_resume_finishes(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.sqlite"
    with FakeOpenAIServer(served_models=("scripted",)) as server:
        typo = solve(db, server, "--role-model", "summary=scriptd", env={})
        assert typo.exit_code == 1, typo.output
        assert "summary model 'scriptd'" in typo.output
        assert "does not know this model or path (HTTP 404)" in typo.output
        assert set(server.refused) == {404} and len(server.refused) <= 2

        bad = cli("resume", "r1", "--db", str(db), "--role-model", "no_such_role=scripted",
                  env={})  # fmt: skip
        assert bad.exit_code == 2 and "no_such_role" in bad.output  # a bad value changes nothing
        fixed = cli("resume", "r1", "--db", str(db), "--quiet", "--role-model",
                    "summary=scripted", env={})  # fmt: skip
        assert fixed.exit_code == 0, fixed.output
    conn = connect(db)
    try:
        saved = saved_plan(RunRegistry(conn).get("r1"))
    finally:
        conn.close()
    assert saved.config.roles["summary"].model == "scripted"
    assert saved.bindings["summary"].model == "scripted"


def test_a_prompt_that_cannot_fit_stops_the_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    with FakeOpenAIServer(max_context_tokens=40) as server:
        result = solve(db, server, env={})
    assert result.exit_code == 1, result.output
    assert "solver model 'scripted'" in result.output
    assert "the prompt does not fit the model's context" in result.output
    assert "maximum context length is 40 tokens" in result.output
    assert len(server.refused) <= 2


def test_an_evaluation_stops_starting_problems_after_a_fatal_failure(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with FakeOpenAIServer(api_key="secret") as server:
        args = [
            "eval", "--out", str(out), "--data", "gsm8k", "--limit", "4", "--concurrency", "1",
            "--base-url", server.base_url, "--model", "scripted", "-n", "2", "-m", "1", "-t",
            "1", "--db", str(tmp_path / "runs.sqlite"), "--quiet",
        ]  # fmt: skip
        stopped = cli(*args, env={"TMAS_API_KEY": "wrong"})
        assert stopped.exit_code == 1, stopped.output
        assert "evaluation stopped" in stopped.output and "(HTTP 401)" in stopped.output
        assert "3 problem(s) not started" in stopped.output
        assert len(server.refused) <= 2  # the first problem's solver calls only
        rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        assert len(rows) == 1 and rows[0]["fatal"] and rows[0]["status"] == "failed"

        fixed = cli(*args, env={"TMAS_API_KEY": "secret"})
        assert fixed.exit_code == 0, fixed.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] == 4


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (ContextOverflowError("4200 prompt tokens, n_ctx=4096"), "does not fit"),
        (ValueError("prompt too long for the context window"), "does not fit"),
        (ConnectionResetError("peer reset"), None),
        (ValueError("bad request"), None),
    ],
)
def test_fatal_causes_are_recognised(error: BaseException, cause: str | None) -> None:
    found = fatal_cause(error)
    assert (found is None) if cause is None else (cause in (found or ""))
    wrapped = ModelCallError.wrap("verifier", error, "'m'")
    assert (wrapped.fatal is None) == (cause is None)
    assert not (wrapped.fatal and wrapped.transient)


# ---- degraded runs ------------------------------------------------------------------------


def test_losing_every_call_of_a_role_marks_the_run_degraded() -> None:
    spec = load_bundled("tmas")
    config = TMASConfig(n_candidates=2, n_verifications=2, max_iterations=1, max_retries=0)
    model = ScriptedChatModel(fail_when=lambda role, n: role == "verifier")
    state = build_graph(spec, llm=ModelRouter(model), config=config).invoke({"problem": PROBLEM})
    assert state["stop_reason"] == "max_iterations"
    assert finished_status(state) == "degraded"
    assert lost_roles(state["usage"]) == ["verifier"]
    healthy = build_graph(spec, llm=ModelRouter(ScriptedChatModel()), config=config).invoke(
        {"problem": PROBLEM}
    )
    assert finished_status(healthy) == "finished"


def test_cli_exits_non_zero_and_shows_a_degraded_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    with FakeOpenAIServer() as main, FaultInjectingServer({"http_500": 1.0}) as judge:
        result = solve(
            db, main, "--role-base-url", f"verifier={judge.base_url}", "--set",
            "max_retries=0", env={},
        )  # fmt: skip
    assert result.exit_code == DEGRADED_EXIT, result.output
    assert "finished degraded: every call of verifier (8 calls) failed" in result.output
    listed = cli("runs", "--db", str(db), env={"COLUMNS": "80"})
    assert "degraded" in listed.output and "r1" in listed.output
    shown = cli("show", "r1", "--db", str(db), env={"COLUMNS": "100"})
    assert shown.exit_code == 0
    assert "status: degraded" in shown.output
    assert "verifier (every call failed)" in shown.output
