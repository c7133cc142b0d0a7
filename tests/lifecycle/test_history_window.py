"""The state keeps a window of iteration records; the full history comes back from checkpoints."""

from __future__ import annotations

from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver

from tmas import build_tmas_graph
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.history import iteration_records, saved_state
from tmas.lifecycle.manager import RunManager
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies

T = 8
REPLIES = ScriptedReplies(answers=("15", "16", "18", "18", "19"))


def config(window: int) -> TMASConfig:
    return TMASConfig(
        n_candidates=3, n_verifications=1, max_iterations=T, history_window=window, epsilon=0.5
    )


def solve(window: int, db: Path) -> tuple[dict, dict]:
    model = ScriptedChatModel(replies=REPLIES)
    manager = RunManager(connect(db), router_factory=lambda plan: ModelRouter(model))
    outcome = manager.start(
        "run",
        problem="What is 9 + 9?",
        gold_answer="18",
        plan=plan_run(load_bundled("tmas"), config(window), BackendSpec()),
        show_progress=False,
    )
    latest = manager.storage.checkpointer.get_tuple({"configurable": {"thread_id": "run"}})
    return outcome.state, dict(latest.checkpoint["channel_values"])


def test_a_short_window_changes_nothing_but_the_state_size(tmp_path: Path) -> None:
    windowed, windowed_raw = solve(2, tmp_path / "a.sqlite")
    whole, whole_raw = solve(1000, tmp_path / "b.sqlite")
    assert [r["iteration"] for r in windowed_raw["history"]] == [T - 1, T]
    assert len(whole_raw["history"]) == T
    assert windowed["history"] == whole["history"]  # read back in full from the checkpoints
    assert windowed["vote_totals"] == whole["vote_totals"]
    assert windowed["final_answer"] == whole["final_answer"]
    assert saved_state(connect(tmp_path / "a.sqlite"), "run")["history"] == whole["history"]


def test_records_of_an_earlier_run_on_the_same_thread_are_not_mixed_in() -> None:
    saver = InMemorySaver()
    graph = build_tmas_graph(config(1), llm=ScriptedChatModel(), checkpointer=saver)
    thread = {"configurable": {"thread_id": "reused"}}
    graph.invoke({"problem": "What is 9 + 9?"}, thread)
    second = TMASConfig(n_candidates=3, n_verifications=1, max_iterations=3, history_window=1)
    graph = build_tmas_graph(second, llm=ScriptedChatModel(), checkpointer=saver)
    graph.invoke({"problem": "What is 2 + 2?"}, thread)
    assert [r["iteration"] for r in iteration_records(saver, "reused")] == [1, 2, 3]


def test_a_run_saved_before_running_totals_keeps_its_earlier_votes() -> None:
    from tmas.nodes.control.record import RecordIteration

    old_history = [
        {"iteration": 1, "vote": {"7": 3.0}},
        {"iteration": 2, "vote": {"7": 2.0}},
    ]
    state = {
        "iteration": 3,
        "history": old_history,
        "candidates": [{"index": 0, "answer": "18", "mode": "explore", "text": "18"}],
        "verifications": [{"candidate_index": 0, "score": 1.0}],
    }
    update = RecordIteration(config(5))(state)  # type: ignore[arg-type]
    assert update["vote_totals"] == {"7": 5.0, "18": 1.0}
    assert update["final_answer"] == "7"
