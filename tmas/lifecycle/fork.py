"""Forking a run: a new run that starts from another run's state after iteration K, with
changed settings (time travel). The parent is untouched; the fork records its parent."""

from __future__ import annotations

from contextlib import closing
from typing import Any

from tmas.lifecycle.history import iteration_records, latest_run_states
from tmas.lifecycle.manager import RunManager, iteration_end_node
from tmas.nodes.control.stop_rules import early_conditions, first_holding
from tmas.storage.run_registry import RunRecord


class ForkError(ValueError):
    """The run cannot be forked as asked."""


def state_after_iteration(manager: RunManager, run_id: str, iteration: int) -> dict[str, Any]:
    """The state of run ``run_id`` as saved when its iteration ``iteration`` ended, with the
    full history up to that iteration; ForkError when the run never finished that iteration."""
    checkpointer = manager.storage.checkpointer
    found = None
    with closing(latest_run_states(checkpointer, run_id)) as states:
        for values in states:
            history = values.get("history") or []
            if (
                values.get("iteration") == iteration
                and history[-1:]
                and (history[-1]["iteration"] == iteration)
            ):
                found = dict(values)
                break
    if found is not None:
        records = iteration_records(checkpointer, run_id)
        found["history"] = [r for r in records if r["iteration"] <= iteration]
        return found
    raise ForkError(f"run {run_id} has no checkpoint at the end of iteration {iteration}")


def fork_run(
    manager: RunManager,
    parent_id: str,
    iteration: int,
    new_id: str,
    updates: dict[str, Any] | None = None,
) -> RunRecord:
    """Register run ``new_id`` that continues ``parent_id`` from the end of ``iteration`` with
    the config fields in ``updates`` changed; drive it with ``manager.resume(new_id)``.

    Example:
        ``fork_run(manager, "abc123", 1, "abc123-eps05", {"epsilon": 0.5})``
    """
    parent = manager.registry.get(parent_id)
    if manager.registry.exists(new_id):
        raise ForkError(f"a run with id {new_id!r} already exists")
    try:
        plan = manager.plan_of(parent).revised(updates or {})
    except ValueError as exc:
        raise ForkError(str(exc)) from None
    config = plan.config
    if iteration >= config.max_iterations:
        raise ForkError(
            f"iteration {iteration} is the last of {config.max_iterations}: fork from an earlier "
            "one or raise max_iterations (--set max_iterations=...)"
        )
    state = state_after_iteration(manager, parent_id, iteration)
    graph = manager.graph_for(plan)
    end_node = iteration_end_node(plan.topology)
    seeded = {**state, "stop_reason": None}
    for edge in plan.topology.edges:
        early = early_conditions(edge.conditions)
        if edge.source == end_node and (holding := first_holding(early, seeded)):
            raise ForkError(
                f"the loop's stop condition {holding!r} already holds after iteration "
                f"{iteration}, so the fork would stop at once: fork from an earlier iteration"
            )
    manager.registry.create(
        new_id,
        problem=parent.problem,
        gold_answer=parent.gold_answer,
        plan=plan.record(),
        parent_run_id=parent_id,
        provenance=parent.provenance,
        documents=parent.documents,
    )
    graph.update_state({"configurable": {"thread_id": new_id}}, seeded, as_node=end_node)
    manager.registry.set_status(new_id, "stopped")
    return manager.registry.get(new_id)
