"""Async model calls: the same graph awaited on an event loop or invoked in threads makes the
same calls; each loop has its own HTTP client and its own bound; a run driven from inside a
running loop (a notebook) still works."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from tmas import build_graph, load_topology
from tmas.config import TMASConfig
from tmas.graphs.registry import register_node
from tmas.graphs.spec import parse_spec
from tmas.lifecycle.event_loop import run_to_end
from tmas.lifecycle.manager import thread_config
from tmas.llm.openai_compat import make_openai_chat_model
from tmas.llm.router import ModelCall, ModelRouter
from tmas.storage.checkpointer import open_checkpointer
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer

CONFIG = TMASConfig(n_candidates=4, n_verifications=2, max_iterations=2, max_retries=0)
PROBLEM = {"problem": "What is 9 + 9?", "gold_answer": "18"}


def calls_per_role(state: dict) -> dict[str, int]:
    return {role: usage["calls"] for role, usage in state["usage"].items()}


def served_router(server: FakeOpenAIServer, bound: int | None) -> ModelRouter:
    model = make_openai_chat_model(
        base_url=server.base_url, model="scripted", max_tokens=64, temperature=0.7
    )
    return ModelRouter(model, max_parallel_calls=bound)


def test_awaited_and_invoked_graphs_make_the_same_calls_with_the_same_outcome() -> None:
    graph = build_graph(load_topology("tmas"), llm=ScriptedChatModel(), config=CONFIG)
    invoked = graph.invoke(PROBLEM, thread_config("invoked", CONFIG))
    awaited = run_to_end(lambda: graph.ainvoke(PROBLEM, thread_config("awaited", CONFIG)))
    assert calls_per_role(awaited) == calls_per_role(invoked)
    assert calls_per_role(awaited)["verifier"] == 4 * 2 * 2
    assert awaited["final_answer"] == invoked["final_answer"] == "18"


def test_runs_on_two_event_loops_at_once_share_nothing_but_the_server() -> None:
    with FakeOpenAIServer(latency_s=0.05) as server:
        graph = build_graph(load_topology("tmas"), llm=served_router(server, 8), config=CONFIG)
        results: dict[str, dict] = {}
        errors: list[BaseException] = []

        def run(name: str) -> None:
            try:
                results[name] = run_to_end(
                    lambda: graph.ainvoke(PROBLEM, thread_config(name, CONFIG))
                )
            except BaseException as exc:  # reported below, with the thread's error
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(f"loop{i}",)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert not errors, errors
    per_run = 2 * (4 + 4 * 2 + 4 + 2 * 4)  # iterations x (solve, verify, summary, reflect)
    assert [sum(calls_per_role(results[n]).values()) for n in ("loop0", "loop1")] == [per_run] * 2
    assert server.request_count == 2 * per_run


def test_calls_in_flight_are_bounded_per_event_loop() -> None:
    with FakeOpenAIServer(latency_s=0.1) as server:
        graph = build_graph(load_topology("tmas"), llm=served_router(server, 3), config=CONFIG)
        run_to_end(lambda: graph.ainvoke(PROBLEM, thread_config("bounded", CONFIG)))
    assert 2 <= server.max_in_flight <= 3


def test_a_run_driven_from_inside_a_running_loop_gets_its_own_loop(tmp_path: Path) -> None:
    conn = connect(tmp_path / "runs.sqlite")
    graph = build_graph(
        load_topology("tmas"),
        llm=ScriptedChatModel(),
        config=CONFIG,
        checkpointer=open_checkpointer(conn),
    )

    async def cell() -> dict:  # as a notebook cell runs: inside the kernel's loop
        return run_to_end(lambda: graph.ainvoke(PROBLEM, thread_config("cell", CONFIG)))

    state = asyncio.run(cell())
    assert state["stop_reason"] == "max_iterations"
    saved = graph.get_state(thread_config("cell", CONFIG)).values
    assert calls_per_role(saved) == calls_per_role(state)


@register_node("async_note_taker", calls_llm=True)
def make_async_note_taker(ctx):
    """A plugin node written as ``async def``: awaits the router itself."""

    async def take_note(state):
        call = ModelCall("solver", "You take notes.", state["problem"], 16, ctx.config.seed)
        reply = await ctx.router.acall(call)
        return {"usage": reply.usage("solver"), "extras": {"note": reply.text}}

    return take_note


NOTE_CONFIG = CONFIG.model_copy(update={"max_iterations": 1})
NOTE_SPEC = {
    "name": "vote_then_note",
    "config": {"max_iterations": 1},
    "nodes": [
        {"id": "start_iteration", "type": "start_iteration", "params": {"planner": "initial"}},
        {"id": "solve", "type": "solve", "role": "solver"},
        {"id": "note", "type": "async_note_taker"},
        {"id": "record_iteration", "type": "record_iteration"},
    ],
    "edges": [
        {"from": "START", "to": "start_iteration"},
        {"from": "start_iteration", "to": "solve", "fanout": {"tasks": "solver_tasks"}},
        {"from": "solve", "to": "note"},
        {"from": "note", "to": "record_iteration"},
        {"from": "record_iteration", "to": "start_iteration", "until": "run_finished"},
    ],
}


def test_an_async_plugin_node_runs_when_awaited_and_is_refused_plainly_when_invoked() -> None:
    graph = build_graph(parse_spec(NOTE_SPEC), llm=ScriptedChatModel(), config=NOTE_CONFIG)
    state = run_to_end(lambda: graph.ainvoke(PROBLEM, thread_config("note", NOTE_CONFIG)))
    assert state["extras"]["note"] and state["usage"]["solver"]["calls"] == 4 + 1
    with pytest.raises(TypeError, match="node 'note' is async: run the graph with ainvoke"):
        graph.invoke(PROBLEM, thread_config("plain", NOTE_CONFIG))


def test_an_async_plugin_node_whose_call_fails_for_good_is_recorded() -> None:
    broken = ScriptedChatModel(fail_when=lambda role, n: role == "solver" and n > 4)
    graph = build_graph(parse_spec(NOTE_SPEC), llm=broken, config=NOTE_CONFIG)
    state = run_to_end(lambda: graph.ainvoke(PROBLEM, thread_config("broken", NOTE_CONFIG)))
    assert state["usage"]["solver"]["failed_calls"] == 1
    assert [f["node"] for f in state["call_failures"]] == ["note"]
