"""The TMAS topology: solve -> verify -> summarize -> reflect -> update banks -> record, looped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send

from tmas.config import TMASConfig
from tmas.lifecycle.failures import RequireCandidate, record_failures, retry_policy
from tmas.llm.router import ModelRouter
from tmas.nodes.agents.experience import ExtractExperience
from tmas.nodes.agents.guideline import ExtractGuideline
from tmas.nodes.agents.reflection import reflection_tasks
from tmas.nodes.agents.solver import Solve, solver_tasks
from tmas.nodes.agents.summarizer import Summarize, summary_tasks
from tmas.nodes.agents.verifier import Verify, verification_tasks
from tmas.nodes.control.bank_update import UpdateBanks
from tmas.nodes.control.iteration import StartIteration
from tmas.nodes.control.record import RecordIteration
from tmas.roles import Role
from tmas.state import RunState


def _join(_: RunState) -> dict[str, Any]:
    """A barrier: runs once after every branch of a fan-out finished."""
    return {}


def build_tmas_graph(
    config: TMASConfig | None = None,
    *,
    llm: BaseChatModel | ModelRouter,
    role_models: Mapping[Role, BaseChatModel] | None = None,
    checkpointer: BaseCheckpointSaver | None = None,
    pass_generation_kwargs: bool = True,
) -> CompiledStateGraph:
    """Compile the TMAS loop into a LangGraph graph.

    Args:
        config: sizes, epsilon, budgets; defaults to ``TMASConfig()``.
        llm: the main chat model (any langchain-core chat model), or a ``ModelRouter``.
        role_models: optional chat models for the verifier, summary, experience and
            guideline roles.
        checkpointer: where checkpoints go (needed for resume); None keeps none.
        pass_generation_kwargs: send ``max_tokens``, ``seed`` and ``temperature`` with each
            call; turn off for a chat model that rejects them.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel, ScriptedReplies
        >>> model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
        >>> graph = build_tmas_graph(TMASConfig(n_candidates=2, n_verifications=1,
        ...                                     max_iterations=1), llm=model)
        >>> graph.invoke({"problem": "What is 9 + 9?"})["final_answer"]
        '18'
    """
    config = config or TMASConfig()
    if isinstance(llm, ModelRouter):
        if role_models:
            raise ValueError("pass role_models to the ModelRouter, not beside it")
        router = llm
    else:
        router = ModelRouter.for_config(llm, role_models, config)
        router.pass_generation_kwargs = pass_generation_kwargs
    graph = StateGraph(RunState)
    retry = retry_policy(config)

    def add_llm_node(name: str, node: Any) -> None:
        graph.add_node(name, record_failures(node, name, retry, config), retry_policy=retry)

    graph.add_node("start_iteration", StartIteration(config))
    add_llm_node("solve", Solve(router, config))
    graph.add_node("candidates_ready", RequireCandidate(_join))
    add_llm_node("verify", Verify(router, config))
    graph.add_node("verifications_ready", _join)
    add_llm_node("summarize", Summarize(router, config))
    graph.add_node("summaries_ready", _join)
    add_llm_node("extract_experience", ExtractExperience(router, config))
    add_llm_node("extract_guideline", ExtractGuideline(router, config))
    graph.add_node("update_banks", UpdateBanks(config))
    graph.add_node("record_iteration", RecordIteration(config))

    graph.add_edge(START, "start_iteration")
    graph.add_conditional_edges(
        "start_iteration",
        lambda s: [Send("solve", task) for task in solver_tasks(s, config)],
        ["solve"],
    )
    graph.add_edge("solve", "candidates_ready")
    graph.add_conditional_edges(
        "candidates_ready",
        lambda s: [Send("verify", task) for task in verification_tasks(s, config)],
        ["verify"],
    )
    graph.add_edge("verify", "verifications_ready")
    graph.add_conditional_edges(
        "verifications_ready",
        lambda s: [Send("summarize", task) for task in summary_tasks(s, config)],
        ["summarize"],
    )
    graph.add_edge("summarize", "summaries_ready")
    graph.add_conditional_edges(
        "summaries_ready",
        lambda s: [
            Send(node, task)
            for task in reflection_tasks(s, config)
            for node in ("extract_experience", "extract_guideline")
        ],
        ["extract_experience", "extract_guideline"],
    )
    graph.add_edge("extract_experience", "update_banks")
    graph.add_edge("extract_guideline", "update_banks")
    graph.add_edge("update_banks", "record_iteration")
    graph.add_conditional_edges(
        "record_iteration",
        lambda s: END if s.get("stop_reason") else "start_iteration",
        ["start_iteration", END],
    )
    return graph.compile(checkpointer=checkpointer, name="tmas")
