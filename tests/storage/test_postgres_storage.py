"""Runs saved in PostgreSQL: solve, list, show, resume, several processes at once, bad URLs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tmas.cli import app
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.history import saved_state
from tmas.lifecycle.manager import RunManager
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.storage import open_storage
from tmas.testing.fake_chat import ScriptedChatModel, SimulatedCrash
from tmas.testing.fake_openai_server import FakeOpenAIServer

PROBLEM = "What is 9 + 9?"
CONFIG = TMASConfig(n_candidates=3, n_verifications=2, max_iterations=3, max_retries=0, seed=5)
SMALL = ("--model", "scripted", "-n", "2", "-m", "1", "-t", "2", "--quiet")


def invoke(db: str, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--db", db])


def manager_on(db: str, model: ScriptedChatModel) -> RunManager:
    return RunManager(
        open_storage(db),
        router_factory=lambda plan: ModelRouter(model),
    )


def test_solve_list_show_and_resume_on_postgres(postgres_url: str) -> None:
    with FakeOpenAIServer() as server:
        run_id = "pg1"
        solved = invoke(
            postgres_url,
            "solve",
            PROBLEM,
            "--base-url",
            server.base_url,
            "--run-id",
            run_id,
            *SMALL,
        )
        assert solved.exit_code == 0, solved.output
        calls = server.request_count
        listed = invoke(postgres_url, "runs")
        assert run_id in listed.output and "finished" in listed.output
        shown = invoke(postgres_url, "show", run_id, "--json")
        assert shown.exit_code == 0, shown.output
        assert json.loads(shown.output[shown.output.index("{") :])["final_answer"] == "18"
        again = invoke(postgres_url, "resume", run_id)
        assert again.exit_code == 0, again.output
        assert server.request_count == calls  # a finished run calls no model


def test_a_failed_run_resumes_on_postgres_as_an_unbroken_run_ends(postgres_url: str) -> None:
    reference_model = ScriptedChatModel()
    reference = manager_on(postgres_url, reference_model).start(
        "whole",
        problem=PROBLEM,
        gold_answer="18",
        plan=plan_run(load_bundled("tmas"), CONFIG, BackendSpec()),
        show_progress=False,
    )

    def crash_on_ninth_check(role: str | None, n: int) -> bool:
        if role == "verifier" and n == 9:
            raise SimulatedCrash("crash during a check")
        return False

    failing = ScriptedChatModel(fail_when=crash_on_ninth_check)
    with pytest.raises(SimulatedCrash):
        manager_on(postgres_url, failing).start(
            "broken",
            problem=PROBLEM,
            gold_answer="18",
            plan=plan_run(load_bundled("tmas"), CONFIG, BackendSpec()),
            show_progress=False,
        )
    manager = manager_on(postgres_url, ScriptedChatModel())
    assert manager.registry.get("broken").status == "failed"
    resumed = manager.resume("broken", show_progress=False)
    assert resumed.finished
    assert resumed.state["history"] == reference.state["history"]
    assert resumed.state["usage"] == reference.state["usage"]
    assert manager.registry.get("broken").status == "finished"


def test_delm_keeps_its_shared_board_in_postgres(postgres_url: str) -> None:
    with FakeOpenAIServer() as server:
        solved = invoke(
            postgres_url,
            "solve",
            PROBLEM,
            "--graph",
            "delm",
            "--base-url",
            server.base_url,
            "--run-id",
            "d1",
            *SMALL,
        )
    assert solved.exit_code == 0, solved.output
    storage = open_storage(postgres_url)
    try:
        tasks = storage.store().search(("delm", "d1", "tasks"), limit=100)
        assert tasks and all(item.value["status"] == "done" for item in tasks)
    finally:
        storage.close()


@pytest.mark.slow
def test_several_processes_share_one_new_postgres_database(postgres_url: str) -> None:
    processes = 4
    with FakeOpenAIServer() as server:
        command = [sys.executable, "-m", "tmas.cli", "solve", PROBLEM, "--db", postgres_url]
        running = [
            subprocess.Popen(
                [*command, "--base-url", server.base_url, "--run-id", f"p{i}", *SMALL],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env={**os.environ, "TMAS_HOME": "/nonexistent-tmas-home"},
            )
            for i in range(processes)
        ]
        outputs = [p.communicate(timeout=120)[0] for p in running]
    assert [p.returncode for p in running] == [0] * processes, outputs
    storage = open_storage(postgres_url)
    try:
        records = storage.registry.all()
        assert sorted(r.run_id for r in records) == [f"p{i}" for i in range(processes)]
        assert {r.status for r in records} == {"finished"}
        for record in records:  # every run saved whole, none mixed up with another
            state = saved_state(storage, record.run_id)
            assert state["final_answer"] == "18"
            assert [h["iteration"] for h in state["history"]] == [1, 2]
    finally:
        storage.close()


@pytest.mark.parametrize("command", [["runs"], ["show", "x"], ["solve", PROBLEM]])
def test_an_unreachable_postgres_database_is_a_clear_error(
    command: list[str], tmp_path: Path
) -> None:
    url = "postgresql://me:hunter2@127.0.0.1:1/runs"
    result = CliRunner().invoke(app, [*command, "--db", url], env={"TMAS_HOME": str(tmp_path)})
    assert result.exit_code != 0
    text = " ".join(result.output.split())
    assert "cannot open run database postgresql://me:***@127.0.0.1:1/runs" in text
    assert "hunter2" not in result.output
    assert "Traceback" not in result.output
