"""What happens once a run finished, beside its graph: a proof run with a reference gets its
judge's grade (saved once, in a checkpoint), and a run with memory leaves its well-verified
items there."""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph

from tmas.config import TMASConfig
from tmas.graphs.run_plan import RunPlan
from tmas.lifecycle.history import saved_state
from tmas.lifecycle.memory_runs import remember
from tmas.lifecycle.proof_grading import grade_proof_run, judge_usage
from tmas.storage.run_registry import RunRecord


def needs_after_finish(config: TMASConfig, state: dict[str, Any], reference: str | None) -> bool:
    """Whether a finished run has anything left to do: memory to keep (idempotent, so always
    when it has a memory) or a proof grade not saved yet.

    Example:
        >>> needs_after_finish(TMASConfig(), {"stop_reason": "max_iterations"}, None)
        False
        >>> needs_after_finish(TMASConfig(proof=True), {"extras": {}}, "a proof")
        True
    """
    ungraded = config.proof and bool(reference) and "proof_grade" not in (state.get("extras") or {})
    return config.memory is not None or ungraded


def after_finish(
    manager: Any,
    record: RunRecord,
    graph: CompiledStateGraph,
    cfg: dict[str, Any],
    plan: RunPlan,
    final: dict[str, Any],
) -> dict[str, Any]:
    """The finished run's state after grading (with the templates of the run's ``plan``) and
    remembering (``manager``: the :class:`~tmas.lifecycle.manager.RunManager` driving it)."""
    config, prompts = plan.config, plan.prompt_set()
    extras = final.get("extras") or {}
    if config.proof and record.gold_answer and "proof_grade" not in extras:  # graded once
        router = manager.router_factory(plan).with_bindings(plan.bindings)
        grade = grade_proof_run(router, config, final, record.gold_answer, prompts)
        graph.update_state(cfg, {"extras": {"proof_grade": grade}, "usage": judge_usage(grade)})
        final = saved_state(manager.storage, record.run_id)
    remember(manager.storage, record.run_id, record.problem, config, final)
    return final
