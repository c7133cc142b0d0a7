"""Agents that pass text: the same chain as the latent one, each agent reading what the agents
before it wrote (``text_mas``, the side-by-side counterpart of ``latent_mas``); any chat model
plays them."""

from __future__ import annotations

from typing import Any

from tmas.llm.calls import ModelCall
from tmas.nodes.agents.chain import (
    agent_messages,
    agent_template,
    chain_records,
    notes_of,
    with_record,
)
from tmas.nodes.agents.solver import failed_candidate
from tmas.nodes.common import SteppedAgent, Steps, answer_update
from tmas.nodes.context import NodeContext
from tmas.state import RunState


class TextAgent(SteppedAgent):
    """Node: one agent writes its notes for the agents after it (a failed call leaves them
    out: the chain goes on).

    Example:
        >>> from tmas.config import TMASConfig
        >>> from tmas.llm.router import ModelRouter
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> ctx = NodeContext(TMASConfig(), ModelRouter(ScriptedChatModel()))
        >>> node = TextAgent(ctx, "planner")
        >>> node({"problem": "What is 2 + 3?", "iteration": 1})["extras"]["agents"][0]["agent"]
        'planner'
    """

    def __init__(self, ctx: NodeContext, agent: str) -> None:
        super().__init__(ctx)
        self.agent = agent

    def ask(self, state: RunState, seed: int) -> ModelCall:
        """The agent's question: the problem and the notes of the agents before it."""
        notes = notes_of(self.prompts, chain_records(state))
        system, user = agent_messages(self.prompts, self.agent, state["problem"], notes)
        return ModelCall(
            self.role,
            system["content"],
            user["content"],
            self.ctx.max_tokens,
            seed,
            prompt=agent_template(self.agent),
        )

    def steps(self, state: RunState) -> Steps:  # type: ignore[override]
        reply = yield self.ask(state, self.config.seed)
        record = {
            "agent": self.agent,
            "iteration": state.get("iteration", 0),
            "text": reply.text,
            "prompt_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
        }
        return {**with_record(state, record), "usage": reply.usage(self.role)}


class TextAnswer(TextAgent):
    """Node: the final agent answers one plan (a task of ``chain_answer_tasks``) from the
    notes; a failed call stands as a failed candidate."""

    def steps(self, task: dict[str, Any]) -> Steps:
        plan = task["plan"]
        reply = yield self.ask(task, plan["seed"])
        update = answer_update(plan, reply, self.role)
        return {
            **update,
            **with_record(task, {"agent": self.agent, "iteration": plan["iteration"]}),
        }

    def on_failure(self, task: dict[str, Any], error: str) -> dict[str, Any]:
        """The candidate that stands for a failed answer."""
        return {"candidates": [failed_candidate(task, error)]}
