"""Agents that pass text: the same chain as the latent one, each agent reading what the agents
before it wrote (``text_mas``, the side-by-side counterpart of ``latent_mas``); any chat model
plays them."""

from __future__ import annotations

from typing import Any

from tmas.config import TMASConfig
from tmas.llm.router import ModelRouter
from tmas.nodes.agents.chain import (
    agent_messages,
    agent_template,
    answer_candidate,
    chain_records,
    notes_of,
    with_record,
)
from tmas.nodes.agents.solver import failed_candidate
from tmas.nodes.prompts import PromptSet
from tmas.roles import Role
from tmas.state import RunState


class TextAgent:
    """Node: one agent writes its notes for the agents after it (or, ``final``, the answer of
    one plan: a task of ``chain_answer_tasks``).

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> node = TextAgent(ModelRouter(ScriptedChatModel()), TMASConfig(), PromptSet(),
        ...                  "solver", "planner")
        >>> node({"problem": "What is 2 + 3?", "iteration": 1})["extras"]["agents"][0]["agent"]
        'planner'
    """

    def __init__(
        self,
        router: ModelRouter,
        config: TMASConfig,
        prompts: PromptSet,
        role: Role,
        agent: str,
        final: bool = False,
    ) -> None:
        self.router, self.config, self.prompts = router, config, prompts
        self.role, self.agent, self.final = role, agent, final

    def _ask(self, state: RunState, seed: int) -> Any:
        notes = notes_of(self.prompts, chain_records(state))
        system, user = agent_messages(self.prompts, self.agent, state["problem"], notes)
        return self.router.complete(
            self.role,
            system["content"],
            user["content"],
            self.config.max_tokens_for(self.role),
            seed,
            prompt=agent_template(self.agent),
        )

    def __call__(self, state: RunState) -> dict[str, Any]:
        iteration = state.get("iteration", 0)
        if self.final:  # a task of chain_answer_tasks: one plan's answer
            plan = state["plan"]  # type: ignore[typeddict-item]
            reply = self._ask(state, plan["seed"])
            candidate = answer_candidate(plan, reply.text, reply.input_tokens, reply.output_tokens)
            record = {"agent": self.agent, "iteration": iteration}
            return {"candidates": [candidate], **with_record(state, record),
                    "usage": reply.usage(self.role)}  # fmt: skip
        reply = self._ask(state, self.config.seed)
        record = {
            "agent": self.agent,
            "iteration": iteration,
            "text": reply.text,
            "prompt_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
        }
        return {**with_record(state, record), "usage": reply.usage(self.role)}

    def on_failure(self, task: dict[str, Any], error: str) -> dict[str, Any]:
        """A final agent's failed answer stands as a failed candidate; an upstream agent's
        failure leaves its notes out."""
        return {"candidates": [failed_candidate(task, error)]} if self.final else {}
