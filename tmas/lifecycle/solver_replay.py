"""Where a run stopped because every solver call of an iteration failed picks up again: the
checkpoint before that iteration's solver step, with the failure records carried over."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from langgraph.types import Command

from tmas.graphs.call_failures import all_failed


def _carried(failed_values: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """The failure records that ``failed_values`` holds beyond ``before``."""
    usage: dict[str, Any] = {}
    earlier_usage = before.get("usage") or {}
    for role, counts in (failed_values.get("usage") or {}).items():
        extra = counts.get("failed_calls", 0) - earlier_usage.get(role, {}).get("failed_calls", 0)
        if extra > 0:
            usage[role] = {"failed_calls": extra}
    earlier = before.get("call_failures") or []
    records = [r for r in failed_values.get("call_failures") or [] if r not in earlier]
    return {k: v for k, v in (("usage", usage), ("call_failures", records)) if v}


def solver_replay(
    graph: Any, config: dict[str, Any], solve_nodes: Collection[str]
) -> tuple[dict[str, Any], Command | None] | None:
    """Where a run stopped by ``AllSolverCallsFailed`` resumes: the config of the checkpoint
    before that iteration's solver step (so every solver call is made again) and a Command
    carrying the failure records over (None when there are none); None for any other run.

    Streaming the graph with that input and config forks the thread there, as time travel does.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> from tmas import build_tmas_graph
        >>> from tmas.config import TMASConfig
        >>> from tmas.graphs.call_failures import AllSolverCallsFailed
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> config = TMASConfig(n_candidates=2, max_iterations=1, max_retries=0)
        >>> down = ScriptedChatModel(fail_when=lambda role, n: role == "solver")
        >>> saver, thread = InMemorySaver(), {"configurable": {"thread_id": "t"}}
        >>> try:
        ...     build_tmas_graph(config, llm=down, checkpointer=saver).invoke(
        ...         {"problem": "1+1?"}, thread)
        ... except AllSolverCallsFailed:
        ...     pass
        >>> back = build_tmas_graph(config, llm=ScriptedChatModel(), checkpointer=saver)
        >>> at, carried = solver_replay(back, thread, ["candidate"])  # the pipeline that solves
        >>> solver = back.invoke(carried, at)["usage"]["solver"]
        >>> solver["calls"], solver["failed_calls"]
        (2, 2)
    """
    latest = graph.get_state(config).values
    if not all_failed(latest.get("candidates")):
        return None
    for snapshot in graph.get_state_history(config):
        same_iteration = snapshot.values.get("iteration") == latest.get("iteration")
        if same_iteration and set(snapshot.next) & set(solve_nodes):
            carried = _carried(latest, snapshot.values)
            configurable = {**config["configurable"], **snapshot.config["configurable"]}
            return {**config, "configurable": configurable}, (
                Command(update=carried) if carried else None
            )
    return None
