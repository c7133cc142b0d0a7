"""A run's iteration records, read back from its checkpoints.

The state keeps only the last ``history_window`` iteration records (so it does not grow with
the number of iterations); each record was in the state when its iteration ended, so the
checkpoints hold them all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tmas.state import IterationRecord
from tmas.storage import Storage, as_storage

if TYPE_CHECKING:  # read through Storage.checkpoint_reader: LangGraph's saver only when needed
    from langgraph.checkpoint.base import BaseCheckpointSaver


def latest_run_states(checkpointer: BaseCheckpointSaver, run_id: str) -> Iterator[dict[str, Any]]:
    """The state of every checkpoint of the latest run on thread ``run_id``, newest first.

    An iteration counter that goes up again, reading backwards, marks an earlier run on the
    same thread (a finished thread given a new problem), where reading stops. Close the
    iterator (``contextlib.closing``) when stopping early: the saver holds its connection
    until then.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> [s.get("iteration") for s in latest_run_states(InMemorySaver(), "none")]
        []
    """
    checkpoints = checkpointer.list({"configurable": {"thread_id": run_id, "checkpoint_ns": ""}})
    newer_iteration: int | None = None
    try:
        for found in checkpoints:
            values: dict[str, Any] = found.checkpoint.get("channel_values", {})
            iteration = values.get("iteration", 0)
            if newer_iteration is not None and iteration > newer_iteration:
                return
            newer_iteration = iteration
            yield values
    finally:
        close = getattr(checkpoints, "close", None)
        if close is not None:
            close()


def iteration_records(checkpointer: BaseCheckpointSaver, run_id: str) -> list[IterationRecord]:
    """Every iteration record of the latest run on thread ``run_id``, oldest first.

    Records are gathered from every checkpoint of that run (:func:`latest_run_states`).

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> from tmas import build_tmas_graph
        >>> from tmas.config import TMASConfig
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> saver = InMemorySaver()
        >>> graph = build_tmas_graph(TMASConfig(n_candidates=2, n_verifications=1,
        ...     max_iterations=4, history_window=1), llm=ScriptedChatModel(), checkpointer=saver)
        >>> state = graph.invoke({"problem": "9+9?"}, {"configurable": {"thread_id": "t"}})
        >>> len(state["history"]), [r["iteration"] for r in iteration_records(saver, "t")]
        (1, [1, 2, 3, 4])
    """
    records: dict[int, IterationRecord] = {}
    for values in latest_run_states(checkpointer, run_id):
        for record in values.get("history", []):
            records.setdefault(record["iteration"], record)
    return [records[i] for i in sorted(records)]


def saved_state(
    storage: Storage | Any, run_id: str, *, full_history: bool = True
) -> dict[str, Any]:
    """The latest checkpointed state of a run ({} before its first checkpoint) in ``storage``
    (a Storage or a SQLite connection); with ``full_history``, ``history`` holds every
    iteration's record (the state itself keeps the last few)."""
    checkpointer = as_storage(storage).checkpoint_reader
    found = checkpointer.get_tuple({"configurable": {"thread_id": run_id}})
    if not found:
        return {}
    state = dict(found.checkpoint["channel_values"])
    if full_history and state.get("history"):
        state["history"] = iteration_records(checkpointer, run_id)
    return state
