"""A finished thread given a new problem starts afresh; a run driven by a live process cannot
be resumed by a second one; saved runs keep the model that ran them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from tmas.checkpoint import connect
from tmas.config import TMASConfig
from tmas.graphs import build_tmas_graph
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.runner import RunBusyError, RunManager
from tmas.testing.fake_chat import ScriptedChatModel, ScriptedReplies


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
        router_factory=lambda backend, config: ModelRouter.for_config(fake, None, config),
    )
    config = TMASConfig(n_candidates=1, n_verifications=1, max_iterations=1)
    manager.registry.create(
        "live",
        problem="1+1?",
        gold_answer=None,
        graph="tmas",
        config=config.model_dump(mode="json"),
        backend={"kind": "llamacpp"},
    )
    assert manager.registry.get("live").pid == os.getpid()  # this process is alive
    with pytest.raises(RunBusyError, match="still running"):
        manager.resume("live", show_progress=False)
    assert sum(fake.calls.values()) == 0


def test_the_default_local_model_is_saved_by_name() -> None:
    resolved = BackendSpec(kind="llamacpp").resolved()
    assert resolved.model in ("qwen", "smollm2")
    assert BackendSpec(kind="llamacpp", model="/x/y.gguf").resolved().model == "/x/y.gguf"
