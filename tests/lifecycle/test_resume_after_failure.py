"""A run crashes mid-call; resuming repeats no finished call and ends as an unbroken run would.

A model call that fails is recorded and left out (``tests/llm/test_llm_faults.py``); what stops
a run is a crash: ``SimulatedCrash`` stands for the process dying during a call."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tmas import build_tmas_graph
from tmas.api import build_graph
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.manager import RunManager
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.storage.checkpointer import open_checkpointer
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel, SimulatedCrash

N, M, T = 3, 2, 3
PROBLEM = "What is 9 + 9?"
CONFIG = TMASConfig(n_candidates=N, n_verifications=M, max_iterations=T, max_retries=0, seed=5)
PER_ITERATION = Counter(
    {"solver": N, "verifier": N * M, "summary": N, "experience": N, "guideline": N}
)
THREAD: dict[str, Any] = {"configurable": {"thread_id": "crash"}, "max_concurrency": 1}

# (role, call number of that role that fails): all inside iteration 2.
FAILURES = [
    ("verifier", N * M + 3),  # the 3rd check of iteration 2
    ("solver", N + 2),  # the 2nd solver of iteration 2
    ("summary", N + 1),  # the 1st summary of iteration 2
]


def fail_on(role: str, number: int) -> Callable[[str | None, int], bool]:
    """Crash the run during one call."""

    def check(r: str | None, n: int) -> bool:
        if r == role and n == number:
            raise SimulatedCrash(f"crash during {role} call {number}")
        return False

    return check


def uninterrupted() -> dict[str, Any]:
    return build_tmas_graph(CONFIG, llm=ScriptedChatModel()).invoke({"problem": PROBLEM})


def assert_same_outcome(resumed: dict[str, Any], reference: dict[str, Any]) -> None:
    assert [r["answers"] for r in resumed["history"]] == [
        r["answers"] for r in reference["history"]
    ]
    assert resumed["history"] == reference["history"]
    assert resumed["final_answer"] == reference["final_answer"]
    assert resumed["experience_bank"] == reference["experience_bank"]
    assert resumed["guideline_bank"] == reference["guideline_bank"]
    assert resumed["usage"] == reference["usage"]


@pytest.mark.parametrize(("role", "number"), FAILURES)
def test_resume_repeats_no_finished_call(tmp_path: Path, role: str, number: int) -> None:
    """The barrier form: the crashed stage's finished siblings are the parent's pending
    writes."""
    db = tmp_path / "runs.sqlite"
    failing = ScriptedChatModel(fail_when=fail_on(role, number))
    saver = open_checkpointer(connect(db))
    graph = barrier_graph(failing, saver)
    with pytest.raises(SimulatedCrash, match=f"crash during {role} call {number}"):
        graph.invoke({"problem": PROBLEM}, THREAD, durability="sync")  # as runs are driven
    before = failing.calls
    assert before[role] >= number

    # The failed superstep keeps its finished siblings as pending writes, plus the crash. On
    # a busy machine a sibling may still be in flight when the crash stops the step: it is
    # cancelled (saved as a CancelledError), and its call is made again on resume, as a
    # kill's would be.
    writes = saver.get_tuple(THREAD).pending_writes
    errors = [repr(value) for _, channel, value in writes if channel == "__error__"]
    assert sum("SimulatedCrash" in e for e in errors) == 1
    assert all("SimulatedCrash" in e or "CancelledError" in e for e in errors)
    pending = Counter(channel for _, channel, _ in writes)
    state_key = {"solver": "candidates", "verifier": "verifications", "summary": "summaries"}
    made = before[role] - PER_ITERATION[role]  # this stage's calls in iteration 2
    lost = made - 1 - pending[state_key[role]]  # made, but cut off with the crash
    assert 0 <= lost <= len(errors) - 1
    snapshot = graph.get_state(THREAD)
    assert snapshot.values["iteration"] == 2
    assert len(snapshot.values["history"]) == 1

    fresh = ScriptedChatModel()
    resumed_graph = barrier_graph(fresh, open_checkpointer(connect(db)))
    final = resumed_graph.invoke(None, THREAD)
    after = fresh.calls

    assert final["stop_reason"] == "max_iterations"
    assert len(final["history"]) == T
    # Each call is made exactly once over both processes, except the one that failed (and
    # any that were in flight with it).
    for kind, per_iteration in PER_ITERATION.items():
        again = (1 + lost) if kind == role else 0
        assert before[kind] + after[kind] == T * per_iteration + again, kind
    # Stages of iteration 2 that finished before the crash are not run again.
    if role != "solver":
        assert after["solver"] == N * (T - 2)
    assert after[role] == T * PER_ITERATION[role] - (before[role] - 1) + lost
    assert final["usage"]["solver"]["calls"] == N * T
    assert_same_outcome(final, uninterrupted())


@pytest.mark.parametrize(("role", "number"), FAILURES)
def test_pipelined_resume_repeats_no_finished_call(tmp_path: Path, role: str, number: int) -> None:
    """The pipelined form (each candidate's chain a subgraph): the crashed chain resumes from
    its own checkpoint, finished chains are the parent's pending writes, and a chain cut off
    with the crash is cancelled (a CancelledError in its namespace)."""
    db = tmp_path / "runs.sqlite"
    failing = ScriptedChatModel(fail_when=fail_on(role, number))
    saver = open_checkpointer(connect(db))
    graph = build_tmas_graph(CONFIG, llm=failing, checkpointer=saver)
    with pytest.raises(SimulatedCrash, match=f"crash during {role} call {number}"):
        graph.invoke({"problem": PROBLEM}, THREAD, durability="sync")
    before = failing.calls
    assert before[role] >= number
    errors = [
        repr(value)
        for saved in saver.list(
            {"configurable": {"thread_id": THREAD["configurable"]["thread_id"]}}
        )
        for _, channel, value in saved.pending_writes or []
        if channel == "__error__"
    ]
    assert all("SimulatedCrash" in e or "CancelledError" in e for e in errors)
    cancelled = sum("CancelledError" in e for e in errors)
    snapshot = graph.get_state(THREAD)
    assert snapshot.values["iteration"] == 2 and len(snapshot.values["history"]) == 1

    fresh = ScriptedChatModel()
    final = build_tmas_graph(CONFIG, llm=fresh, checkpointer=open_checkpointer(connect(db))).invoke(
        None, THREAD
    )
    after = fresh.calls
    assert final["stop_reason"] == "max_iterations" and len(final["history"]) == T
    # Each call is made exactly once over both processes, except the one that failed (and
    # any cancelled in flight with it).
    for kind, per_iteration in PER_ITERATION.items():
        again = before[kind] + after[kind] - T * per_iteration
        if kind == role:
            assert 1 <= again <= 1 + cancelled, kind
        else:
            assert again <= cancelled and again >= 0, kind
    assert final["usage"]["solver"]["calls"] == N * T
    assert_same_outcome(final, uninterrupted())


def barrier_graph(model: ScriptedChatModel, saver: Any) -> Any:
    """The barrier form of the TMAS topology with ``model`` and ``saver``."""
    return build_graph(
        load_bundled("tmas_barrier"), llm=ModelRouter(model), config=CONFIG, checkpointer=saver
    )


def transient_failure_on(role: str, number: int) -> Callable[[str | None, int], bool]:
    """Raise a transient (connection) error on one call; the retry policy may retry it."""

    def check(r: str | None, n: int) -> bool:
        if r == role and n == number:
            raise ConnectionError(f"connection reset on {role} call {number}")
        return False

    return check


def test_transient_failure_is_retried_when_retries_are_allowed() -> None:
    model = ScriptedChatModel(fail_when=transient_failure_on("verifier", 4))
    config = CONFIG.model_copy(update={"max_retries": 1})
    state = build_tmas_graph(config, llm=model).invoke({"problem": PROBLEM})
    assert state["stop_reason"] == "max_iterations"
    assert model.calls["verifier"] == N * M * T + 1  # the failed call was made once more
    assert state["usage"]["verifier"]["calls"] == N * M * T
    assert_same_outcome(state, uninterrupted())


def test_transient_failure_is_recorded_with_zero_retries() -> None:
    model = ScriptedChatModel(fail_when=transient_failure_on("verifier", 4))
    state = build_tmas_graph(CONFIG, llm=model).invoke({"problem": PROBLEM})
    assert state["stop_reason"] == "max_iterations"
    assert model.calls["verifier"] == N * M * T  # not retried
    assert state["usage"]["verifier"]["calls"] == N * M * T - 1
    assert state["usage"]["verifier"]["failed_calls"] == 1
    (failure,) = state["call_failures"]
    assert failure["role"] == "verifier" and "ConnectionError" in failure["error"]


def test_failed_call_is_not_retried_even_when_retries_are_allowed() -> None:
    model = ScriptedChatModel(fail_when=lambda role, n: role == "summary" and n == 2)
    config = CONFIG.model_copy(update={"max_retries": 3})
    state = build_tmas_graph(config, llm=model).invoke({"problem": PROBLEM})
    assert model.calls["summary"] == N * T  # a non-transient failure is not retried
    assert state["usage"]["summary"]["failed_calls"] == 1
    assert "scripted failure of summary call 2" in state["call_failures"][0]["error"]


def router_for(model: ScriptedChatModel) -> Callable[[dict, TMASConfig], ModelRouter]:
    return lambda plan: ModelRouter(model)


def test_run_manager_start_fail_resume(tmp_path: Path) -> None:
    conn = connect(tmp_path / "runs.sqlite")
    failing = ScriptedChatModel(fail_when=fail_on("verifier", N * M + 3))
    manager = RunManager(conn, router_factory=router_for(failing))
    with pytest.raises(SimulatedCrash):
        manager.start(
            "r1",
            problem=PROBLEM,
            gold_answer="18",
            plan=plan_run(load_bundled("tmas"), CONFIG, BackendSpec()),
            show_progress=False,
            max_concurrency=1,
        )
    record = manager.registry.get("r1")
    assert record.status == "failed"
    assert record.error is not None and "SimulatedCrash: crash during verifier" in record.error
    before = failing.calls

    fresh = ScriptedChatModel()
    outcome = RunManager(conn, router_factory=router_for(fresh)).resume(
        "r1", show_progress=False, max_concurrency=1
    )
    after = fresh.calls
    assert outcome.finished
    assert outcome.state["stop_reason"] == "max_iterations"
    assert manager.registry.get("r1").status == "finished"
    assert after["solver"] == N * (T - 2)
    for kind, per_iteration in PER_ITERATION.items():
        assert before[kind] + after[kind] == T * per_iteration + (kind == "verifier"), kind

    # The same run without a crash, through the same manager path.
    clean = ScriptedChatModel()
    reference = RunManager(conn, router_factory=router_for(clean)).start(
        "r2",
        problem=PROBLEM,
        gold_answer="18",
        plan=plan_run(load_bundled("tmas"), CONFIG, BackendSpec()),
        show_progress=False,
        max_concurrency=1,
    )
    assert sum(clean.calls.values()) == T * CONFIG.calls_per_iteration()
    assert_same_outcome(outcome.state, reference.state)
    assert [r["pass_at_1"] for r in outcome.state["history"]] == [
        r["pass_at_1"] for r in reference.state["history"]
    ]

    # Resuming a finished run changes nothing and calls no model.
    idle = ScriptedChatModel()
    again = RunManager(conn, router_factory=router_for(idle)).resume("r1", show_progress=False)
    assert sum(idle.calls.values()) == 0
    assert again.state["history"] == outcome.state["history"]
    assert again.state["final_answer"] == outcome.state["final_answer"]
