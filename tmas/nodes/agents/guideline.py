"""The guideline agent: names the high-level strategy one rollout tried."""

from __future__ import annotations

from typing import Any

from tmas.answers.parsing import parse_strategy
from tmas.nodes.common import SteppedAgent, Steps, agent_update
from tmas.nodes.prompts import prompt_fields
from tmas.seeding import derive_seed


class ExtractGuideline(SteppedAgent):
    """Node: propose a guideline-bank entry (the strategy used) from one rollout."""

    def steps(self, task: dict[str, Any]) -> Steps:
        seed = derive_seed(
            self.config.seed, "guideline", task["iteration"], task["candidate_index"]
        )
        reply = yield self.ctx.ask(prompt_fields(task), seed=seed)
        parsed = parse_strategy(reply.text)
        proposals = []
        if parsed.value:
            proposals.append(
                {
                    "text": parsed.value,
                    "iteration": task["iteration"],
                    "source_index": task["candidate_index"],
                }
            )
        return agent_update(
            "guideline_proposals",
            proposals,
            self.role,
            reply,
            parsed,
            iteration=task["iteration"],
            index=task["candidate_index"],
        )
