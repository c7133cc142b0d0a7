"""The built-in node types of agent chains: agents that pass latents over one shared KV cache
(``latent_agent``, ``latent_answer``) and the same agents passing text (``text_agent``,
``text_answer``). A node's ``role:`` names the role it plays (its budget and usage); latent
nodes refuse, when the topology is compiled, a model whose internals they cannot reach."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from tmas.graphs.builtin import per_candidate
from tmas.graphs.registry import NodeContext, register_node, register_tasks
from tmas.llm.hf.internals import LatentModelError, loaded_model_of
from tmas.nodes.agents.chain import chain_answer_tasks, missing_template
from tmas.nodes.agents.latent_agents import LatentAgent, LatentAnswer
from tmas.nodes.agents.text_agents import TextAgent, TextAnswer

LatentSteps = Annotated[int, Field(ge=0, le=4096)]


register_tasks(
    "chain_answer_tasks",
    count=per_candidate,
    label="N",
    fields=("problem", "iteration", "plan", "extras"),
)(chain_answer_tasks)


def _checked(ctx: NodeContext, agent: str) -> str:
    problem = missing_template(ctx.prompts, agent)
    if problem:
        raise ValueError(problem)
    return agent


def _shared_model(ctx: NodeContext, agent: str) -> Any:
    """The in-process model of a latent node's role, which must be the run's main model: all
    latent agents extend one KV cache."""
    loaded = loaded_model_of(ctx.router.model_for(ctx.role), agent)
    if loaded is not loaded_model_of(ctx.router.main, agent):
        raise LatentModelError(
            f"node {agent!r} plays {ctx.role!r} on another model than the run's: latent agents "
            "share one KV cache, so every one of them runs on the main model"
        )
    return loaded


CHAIN_PROMPTS = {"mas/system": ("agent",), "mas/{agent}": ("problem", "notes")}
"""What an agent of a chain renders: exact keys, the agent's own named by its ``agent``
parameter (:mod:`tmas.nodes.agents.chain`)."""
TEXT_CHAIN_PROMPTS = {**CHAIN_PROMPTS, "mas/notes": ("notes",)}
AGENT_WRITES = ("extras", "usage", "call_failures")
ANSWER_WRITES = ("candidates", "extras", "parse_issues", "usage", "call_failures")


@register_node(
    "latent_agent",
    calls_llm=True,
    needs_internals=True,
    role="solver",
    prompts=CHAIN_PROMPTS,
    reads=("problem", "iteration", "extras"),
    writes=AGENT_WRITES,
)
def _latent_agent(
    ctx: NodeContext,
    agent: str,
    latent_steps: LatentSteps = 8,
    realign: bool = True,
    keep_prompt: bool = True,
) -> LatentAgent:
    loaded = _shared_model(ctx, agent)
    return LatentAgent(
        loaded, ctx.prompts, ctx.role, _checked(ctx, agent), latent_steps, realign, keep_prompt
    )


@register_node(
    "latent_answer",
    calls_llm=True,
    produces_candidates=True,
    needs_internals=True,
    role="solver",
    prompts=CHAIN_PROMPTS,
    writes=ANSWER_WRITES,
)
def _latent_answer(ctx: NodeContext, agent: str = "judger") -> LatentAnswer:
    loaded = _shared_model(ctx, agent)
    temperature = ctx.router.temperature_for(ctx.role)
    return LatentAnswer(
        loaded,
        ctx.prompts,
        ctx.role,
        _checked(ctx, agent),
        ctx.max_tokens,
        ctx.config.temperature if temperature is None else temperature,
    )


@register_node(
    "text_agent",
    calls_llm=True,
    role="solver",
    prompts=TEXT_CHAIN_PROMPTS,
    reads=("problem", "iteration", "extras"),
    writes=AGENT_WRITES,
)
def _text_agent(ctx: NodeContext, agent: str) -> TextAgent:
    return TextAgent(ctx, _checked(ctx, agent))


@register_node(
    "text_answer",
    calls_llm=True,
    produces_candidates=True,
    role="solver",
    prompts=TEXT_CHAIN_PROMPTS,
    writes=ANSWER_WRITES,
)
def _text_answer(ctx: NodeContext, agent: str = "judger") -> TextAnswer:
    return TextAnswer(ctx, _checked(ctx, agent))
