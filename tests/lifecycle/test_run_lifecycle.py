"""A finished thread given a new problem starts afresh; a run driven by a live process cannot
be resumed by a second one; saved runs keep the model that ran them."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from pathlib import Path

import pytest
from kill_helpers import solve_command
from langgraph.checkpoint.memory import InMemorySaver
from typer.testing import CliRunner

from tmas import build_tmas_graph
from tmas.cli import app
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.manager import RunBusyError, RunManager
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel, ScriptedReplies
from tmas.testing.fake_openai_server import FakeOpenAIServer


def _graph():
    return build_tmas_graph(
        TMASConfig(n_candidates=2, n_verifications=1, max_iterations=2),
        llm=ScriptedChatModel(replies=ScriptedReplies(answers=("18",))),
        checkpointer=InMemorySaver(),
    )


def test_new_problem_on_a_finished_thread_is_a_fresh_run() -> None:
    graph = _graph()
    thread = {"configurable": {"thread_id": "same"}}
    graph.invoke({"problem": "What is 9 + 9?"}, thread)
    second = graph.invoke({"problem": "What is 2 + 3?", "gold_answer": "5"}, thread)
    alone = _graph().invoke(
        {"problem": "What is 2 + 3?", "gold_answer": "5"}, {"configurable": {"thread_id": "b"}}
    )
    for key in ("history", "experience_bank", "guideline_bank", "final_answer", "iteration"):
        assert second[key] == alone[key], key


def test_resuming_a_run_that_a_live_process_drives_is_refused(tmp_path: Path) -> None:
    fake = ScriptedChatModel()
    manager = RunManager(
        connect(tmp_path / "runs.sqlite"),
        router_factory=lambda plan: ModelRouter(fake),
    )
    config = TMASConfig(n_candidates=1, n_verifications=1, max_iterations=1)
    manager.registry.create(
        "live",
        problem="1+1?",
        gold_answer=None,
        plan=plan_run(load_bundled("tmas"), config, BackendSpec()).record(),
    )
    assert manager.registry.get("live").pid == os.getpid()  # this process is alive
    with pytest.raises(RunBusyError, match="still running"):
        manager.resume("live", show_progress=False)
    assert sum(fake.calls.values()) == 0


def test_the_default_local_model_is_saved_by_name() -> None:
    resolved = BackendSpec(kind="llamacpp").resolved()
    assert resolved.model in ("qwen", "smollm2")
    assert BackendSpec(kind="llamacpp", model="/x/y.gguf").resolved().model == "/x/y.gguf"


def test_a_killed_run_is_listed_as_interrupted_even_before_it_is_reaped(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    with FakeOpenAIServer(latency_s=0.3) as server:
        process = subprocess.Popen(
            solve_command(server, db, "killed"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while server.request_count < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert server.request_count >= 1, "the run never started"
            assert runs_listing(db)["killed"] == "running"
            process.kill()  # SIGKILL; not reaped yet: a zombie is still in the process table
            time.sleep(0.2)
            assert runs_listing(db)["killed"] == "interrupted"
        finally:
            process.kill()
            process.wait()
    assert runs_listing(db)["killed"] == "interrupted"


def test_a_reused_process_id_does_not_keep_a_run_running(tmp_path: Path) -> None:
    manager = RunManager(connect(tmp_path / "runs.sqlite"))
    manager.registry.create(
        "old",
        problem="1+1?",
        gold_answer=None,
        plan={"topology": {"name": "tmas"}},
    )
    record = manager.registry.get("old")
    assert manager.status_of(record, {}) == "running"
    # the same id now belongs to a process that started at another time
    reused = dataclasses.replace(record, pid_started=(record.pid_started or 0) + 1)
    assert manager.status_of(reused, {}) == "interrupted"


def runs_listing(db: Path) -> dict[str, str]:
    """Status by run id, as ``tmas runs`` prints them in an 80-column terminal."""
    result = CliRunner().invoke(app, ["runs", "--db", str(db)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    found = {}
    for line in result.output.splitlines():
        parts = line.split()
        if len(parts) > 4 and parts[0] in ("killed", "old"):
            found[parts[0]] = parts[3]
    return found
