"""The built-in node types and task builders, registered by name (the built-in planners, stop
conditions and selection rules register themselves in :mod:`tmas.nodes.control`).

A factory's keyword parameters are the node's spec ``params``; their annotations are checked
with the spec."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field

from tmas.config import TMASConfig
from tmas.graphs.registry import NodeContext, register_node, register_tasks
from tmas.nodes.agents.delm import DELM_WORKER_STEPS, DelmAnswer, DelmSeed, DelmWorker
from tmas.nodes.agents.experience import ExtractExperience
from tmas.nodes.agents.guideline import ExtractGuideline
from tmas.nodes.agents.reflection import (
    REFLECTION_PROMPTS,
    REFLECTION_TASK_FIELDS,
    reflection_tasks,
)
from tmas.nodes.agents.solver import SOLVER_PROMPTS, SOLVER_TASK_FIELDS, Solve, solver_tasks
from tmas.nodes.agents.summarizer import (
    SUMMARY_PROMPTS,
    SUMMARY_TASK_FIELDS,
    ReportsAsSummary,
    Summarize,
    summary_tasks,
)
from tmas.nodes.agents.verifier import (
    VERIFICATION_TASK_FIELDS,
    VERIFIER_PROMPTS,
    Verify,
    verification_tasks,
)
from tmas.nodes.control.bank_update import UpdateBanks
from tmas.nodes.control.iteration import StartIteration
from tmas.nodes.control.planners import PlannerName, option_problems
from tmas.nodes.control.record import RecordIteration
from tmas.nodes.control.selection_rules import DEFAULT_SELECTION, SelectionName


def _planner_options(params: Mapping[str, Any]) -> list[str]:
    options = {k: v for k, v in params.items() if k not in ("planner", "final_round_size")}
    return option_problems(params.get("planner", "epsilon_greedy"), options)


FAILED_CALLS = ("usage", "call_failures")
"""What a model call that failed for good writes, whatever node made it
(:mod:`tmas.graphs.call_failures`)."""
ITERATION_STATE = ("candidates", "verifications", "summaries", "experience_proposals",
                   "guideline_proposals")  # fmt: skip
"""The lists an iteration fills and the next one empties."""


@register_node(
    "start_iteration",
    check_params=_planner_options,
    starts_iteration=True,
    reads=("iteration", "candidates", "summaries", "stop_reason"),
    writes=("iteration", "previous", "plans", *ITERATION_STATE, "experience_bank",
            "guideline_bank", "history", "vote_totals", "final_answer", "stop_reason",
            "extras"),
)  # fmt: skip
def _start_iteration(
    ctx: NodeContext,
    planner: PlannerName = "epsilon_greedy",
    final_round_size: Annotated[int, Field(ge=1, le=256)] | None = None,
    **options: Any,
) -> StartIteration:
    return StartIteration(
        ctx.config, planner, final_round_size=final_round_size, channels=ctx.channels, **options
    )


@register_node(
    "solve",
    calls_llm=True,
    produces_candidates=True,
    role="solver",
    prompts=SOLVER_PROMPTS,
    writes=("candidates", "parse_issues", *FAILED_CALLS),
)
def _solve(ctx: NodeContext) -> Solve:
    return Solve(ctx)


@register_node(
    "verify",
    calls_llm=True,
    role="verifier",
    prompts=VERIFIER_PROMPTS,
    writes=("verifications", "parse_issues", *FAILED_CALLS),
)
def _verify(ctx: NodeContext) -> Verify:
    return Verify(ctx)


@register_node(
    "summarize",
    calls_llm=True,
    role="summary",
    prompts=SUMMARY_PROMPTS,
    writes=("summaries", "parse_issues", *FAILED_CALLS),
)
def _summarize(ctx: NodeContext) -> Summarize:
    return Summarize(ctx)


@register_node("reports_as_summary", writes=("summaries",))
def _reports_as_summary(ctx: NodeContext) -> ReportsAsSummary:
    return ReportsAsSummary()


@register_node(
    "extract_experience",
    calls_llm=True,
    role="experience",
    prompts=REFLECTION_PROMPTS,
    writes=("experience_proposals", "parse_issues", *FAILED_CALLS),
)
def _extract_experience(ctx: NodeContext) -> ExtractExperience:
    return ExtractExperience(ctx)


@register_node(
    "extract_guideline",
    calls_llm=True,
    role="guideline",
    prompts=REFLECTION_PROMPTS,
    writes=("guideline_proposals", "parse_issues", *FAILED_CALLS),
)
def _extract_guideline(ctx: NodeContext) -> ExtractGuideline:
    return ExtractGuideline(ctx)


@register_node(
    "update_banks",
    reads=("iteration", "candidates", "experience_proposals", "guideline_proposals",
           "experience_bank", "guideline_bank"),
    writes=("experience_bank", "guideline_bank", "bank_growth"),
)  # fmt: skip
def _update_banks(ctx: NodeContext) -> UpdateBanks:
    return UpdateBanks(ctx.config)


@register_node(
    "record_iteration",
    ends_iteration=True,
    reads=("iteration", "gold_answer", "candidates", "verifications", "summaries", "history",
           "vote_totals", "bank_growth", "parse_issues", "call_failures", "usage", "extras"),
    writes=("history", "vote_totals", "final_answer", "selection", "stop_reason", "extras"),
)  # fmt: skip
def _record_iteration(
    ctx: NodeContext, selection: SelectionName = DEFAULT_SELECTION
) -> RecordIteration:
    return RecordIteration(ctx.config, selection, ctx.channels)


DELM_PLANNER = ("problem", "max_tasks")
DELM_WORKER = ("problem", "task", "notes", "document")
DELM_ANSWER = ("problem", "notes")
DELM_JUDGE = ("problem", "note", "evidence")


@register_node(
    "delm_seed",
    calls_llm=True,
    max_calls=lambda params, config: 1,
    needs_store=True,
    role="solver",
    group="delm",
    prompts={"planner_system": DELM_PLANNER, "planner_user": DELM_PLANNER},
    reads=("problem", "documents"),
    writes=("iteration", "candidates", "parse_issues", *FAILED_CALLS),
)
def _delm_seed(ctx: NodeContext, max_tasks: Annotated[int, Field(ge=1, le=64)] = 4) -> DelmSeed:
    return DelmSeed(ctx, max_tasks)


def _worker_calls(params: dict[str, Any], config: TMASConfig) -> int:
    """A worker's claimed tasks, each one reasoning call and at most one judge call."""
    return 2 * int(params.get("steps", DELM_WORKER_STEPS))


@register_node(
    "delm_worker",
    calls_llm=True,
    max_calls=_worker_calls,
    needs_store=True,
    role="solver",
    group="delm",
    prompts={
        "worker_system": DELM_WORKER,
        "worker_user": DELM_WORKER,
        "delm/judge_system": (),  # the gate's judge: exact keys, whatever the node's role
        "delm/judge_user": DELM_JUDGE,
    },
    writes=("parse_issues", *FAILED_CALLS),
)
def _delm_worker(
    ctx: NodeContext,
    steps: Annotated[int, Field(ge=1, le=1000)] = DELM_WORKER_STEPS,
    claim_ttl_s: Annotated[float, Field(gt=0)] = 120.0,
    max_tasks: Annotated[int, Field(ge=1, le=1000)] = 12,
    max_note_chars: Annotated[int, Field(ge=20)] = 600,
    poll_s: Annotated[float, Field(gt=0)] = 0.05,
    judge_role: str = "verifier",
) -> DelmWorker:
    return DelmWorker(
        ctx,
        steps=steps,
        claim_ttl_s=claim_ttl_s,
        max_tasks=max_tasks,
        max_note_chars=max_note_chars,
        poll_s=poll_s,
        judge_role=judge_role,
    )


@register_node(
    "delm_answer",
    calls_llm=True,
    needs_store=True,
    role="solver",
    group="delm",
    prompts={"answer_system": DELM_ANSWER, "answer_user": DELM_ANSWER},
    reads=("problem",),
    writes=("candidates", "parse_issues", *FAILED_CALLS),
)
def _delm_answer(ctx: NodeContext) -> DelmAnswer:
    return DelmAnswer(ctx)


def join(_: Any) -> dict[str, Any]:
    """A barrier: runs once after every branch of a fan-out finished."""
    return {}


@register_node("join")
def _join(ctx: NodeContext) -> Any:
    """Node: a barrier that runs once after every branch leading to it finished."""
    return join


def per_candidate(config: TMASConfig, width: int) -> int:
    """Tasks of a fan-out that sends one per candidate of the iteration.

    Example:
        >>> per_candidate(TMASConfig(), 4)
        4
    """
    return width


def _per_check(config: TMASConfig, width: int) -> int:
    return width * config.n_verifications


register_tasks("solver_tasks", count=per_candidate, label="N", fields=SOLVER_TASK_FIELDS)(
    solver_tasks
)
register_tasks(
    "verification_tasks", count=_per_check, label="N x M", fields=VERIFICATION_TASK_FIELDS
)(verification_tasks)
register_tasks("summary_tasks", count=per_candidate, label="N", fields=SUMMARY_TASK_FIELDS)(
    summary_tasks
)
register_tasks("reflection_tasks", count=per_candidate, label="N", fields=REFLECTION_TASK_FIELDS)(
    reflection_tasks
)
