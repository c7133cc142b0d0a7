"""The built-in node types, task builders and stop conditions, registered by name."""

from __future__ import annotations

from typing import Any

from tmas.config import TMASConfig
from tmas.graphs.registry import NodeContext, register_node, register_stop, register_tasks
from tmas.nodes.agents.delm import DELM_WORKER_STEPS, DelmAnswer, DelmSeed, DelmWorker
from tmas.nodes.agents.experience import ExtractExperience
from tmas.nodes.agents.guideline import ExtractGuideline
from tmas.nodes.agents.reflection import reflection_tasks
from tmas.nodes.agents.solver import Solve, solver_tasks
from tmas.nodes.agents.summarizer import ReportsAsSummary, Summarize, summary_tasks
from tmas.nodes.agents.verifier import Verify, verification_tasks
from tmas.nodes.control.bank_update import UpdateBanks
from tmas.nodes.control.iteration import StartIteration
from tmas.nodes.control.record import RecordIteration


@register_node("start_iteration")
def _start_iteration(ctx: NodeContext, **params: Any) -> StartIteration:
    return StartIteration(ctx.config, **params)


@register_node("solve", calls_llm=True)
def _solve(ctx: NodeContext) -> Solve:
    return Solve(ctx.router, ctx.config, ctx.prompts)


@register_node("verify", calls_llm=True)
def _verify(ctx: NodeContext) -> Verify:
    return Verify(ctx.router, ctx.config, ctx.prompts)


@register_node("summarize", calls_llm=True)
def _summarize(ctx: NodeContext) -> Summarize:
    return Summarize(ctx.router, ctx.config, ctx.prompts)


@register_node("reports_as_summary")
def _reports_as_summary(ctx: NodeContext) -> ReportsAsSummary:
    return ReportsAsSummary()


@register_node("extract_experience", calls_llm=True)
def _extract_experience(ctx: NodeContext) -> ExtractExperience:
    return ExtractExperience(ctx.router, ctx.config, ctx.prompts)


@register_node("extract_guideline", calls_llm=True)
def _extract_guideline(ctx: NodeContext) -> ExtractGuideline:
    return ExtractGuideline(ctx.router, ctx.config, ctx.prompts)


@register_node("update_banks")
def _update_banks(ctx: NodeContext) -> UpdateBanks:
    return UpdateBanks(ctx.config)


@register_node("record_iteration")
def _record_iteration(ctx: NodeContext, **params: Any) -> RecordIteration:
    return RecordIteration(ctx.config, **params)


@register_node("delm_seed", calls_llm=True, max_calls=lambda params, config: 1)
def _delm_seed(ctx: NodeContext, **params: Any) -> DelmSeed:
    return DelmSeed(ctx.router, ctx.config, prompt_set=ctx.prompts, **params)


def _worker_calls(params: dict[str, Any], config: TMASConfig) -> int:
    """A worker's claimed tasks, each one reasoning call and at most one judge call."""
    return 2 * int(params.get("steps", DELM_WORKER_STEPS))


@register_node("delm_worker", calls_llm=True, max_calls=_worker_calls)
def _delm_worker(ctx: NodeContext, **params: Any) -> DelmWorker:
    return DelmWorker(ctx.router, ctx.config, prompt_set=ctx.prompts, **params)


@register_node("delm_answer", calls_llm=True)
def _delm_answer(ctx: NodeContext) -> DelmAnswer:
    return DelmAnswer(ctx.router, ctx.config, ctx.prompts)


def join(_: Any) -> dict[str, Any]:
    """A barrier: runs once after every branch of a fan-out finished."""
    return {}


@register_node("join")
def _join(ctx: NodeContext) -> Any:
    return join


def _per_candidate(config: TMASConfig, width: int) -> int:
    return width


def _per_check(config: TMASConfig, width: int) -> int:
    return width * config.n_verifications


register_tasks("solver_tasks", count=_per_candidate, label="N")(solver_tasks)
register_tasks("verification_tasks", count=_per_check, label="N x M")(verification_tasks)
register_tasks("summary_tasks", count=_per_candidate, label="N")(summary_tasks)
register_tasks("reflection_tasks", count=_per_candidate, label="N")(reflection_tasks)


@register_stop("run_finished")
def run_finished(state: dict[str, Any]) -> bool:
    """True once the iteration record set a stop reason (max iterations or early stop)."""
    return bool(state.get("stop_reason"))
