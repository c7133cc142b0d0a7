"""The built-in node types of agent chains: agents that pass latents over one shared KV cache
(``latent_agent``, ``latent_answer``) and the same agents passing text (``text_agent``,
``text_answer``). A node's ``role:`` names the role it plays (its budget and usage); latent
nodes refuse, when the topology is compiled, a model whose internals they cannot reach."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tmas.config import TMASConfig
from tmas.graphs.registry import NodeContext, register_node, register_tasks
from tmas.llm.hf.internals import loaded_model_of
from tmas.nodes.agents.chain import chain_answer_tasks, template_problems
from tmas.nodes.agents.latent_agents import LatentAgent, LatentAnswer
from tmas.nodes.agents.text_agents import TextAgent
from tmas.roles import Role

LatentSteps = Annotated[int, Field(ge=0, le=4096)]


def _per_candidate(config: TMASConfig, width: int) -> int:
    return width


register_tasks("chain_answer_tasks", count=_per_candidate, label="N")(chain_answer_tasks)


def _role(ctx: NodeContext) -> Role:
    return ctx.router.model_role or "solver"


def _checked(ctx: NodeContext, agent: str) -> str:
    problems = template_problems(ctx.prompts, agent)
    if problems:
        raise ValueError(problems[0])
    return agent


@register_node("latent_agent", calls_llm=True, needs_internals=True)
def _latent_agent(
    ctx: NodeContext,
    agent: str,
    latent_steps: LatentSteps = 8,
    realign: bool = True,
    keep_prompt: bool = True,
) -> LatentAgent:
    loaded = loaded_model_of(ctx.router.model_for(_role(ctx)), agent)
    return LatentAgent(
        loaded, ctx.prompts, _role(ctx), _checked(ctx, agent), latent_steps, realign, keep_prompt
    )


@register_node(
    "latent_answer",
    calls_llm=True,
    produces_candidates=True,
    needs_internals=True,
)
def _latent_answer(ctx: NodeContext, agent: str = "judger") -> LatentAnswer:
    role = _role(ctx)
    loaded = loaded_model_of(ctx.router.model_for(role), agent)
    temperature = ctx.router.temperature_for(role)
    return LatentAnswer(
        loaded,
        ctx.prompts,
        role,
        _checked(ctx, agent),
        ctx.config.max_tokens_for(role),
        ctx.config.temperature if temperature is None else temperature,
    )


@register_node("text_agent", calls_llm=True)
def _text_agent(ctx: NodeContext, agent: str) -> TextAgent:
    return TextAgent(ctx.router, ctx.config, ctx.prompts, _role(ctx), _checked(ctx, agent))


@register_node("text_answer", calls_llm=True, produces_candidates=True)
def _text_answer(ctx: NodeContext, agent: str = "judger") -> TextAgent:
    role = _role(ctx)
    return TextAgent(ctx.router, ctx.config, ctx.prompts, role, _checked(ctx, agent), final=True)
