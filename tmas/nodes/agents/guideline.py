"""The guideline agent: names the high-level strategy one rollout tried."""

from __future__ import annotations

from typing import Any

from tmas.answers.parsing import parse_strategy
from tmas.llm.router import ModelCall
from tmas.nodes.common import SteppedAgent, Steps, agent_update
from tmas.seeding import derive_seed


class ExtractGuideline(SteppedAgent):
    """Node: propose a guideline-bank entry (the strategy used) from one rollout."""

    def steps(self, task: dict[str, Any]) -> Steps:
        reply = yield ModelCall(
            "guideline",
            self.prompts.render("guideline/system"),
            self.prompts.render(
                "guideline/user", problem=task["problem"], solution=task["solution"]
            ),
            self.config.max_tokens_for("guideline"),
            derive_seed(self.config.seed, "guideline", task["iteration"], task["candidate_index"]),
            prompt="guideline/user",
        )
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
            "guideline",
            reply,
            parsed,
            iteration=task["iteration"],
            index=task["candidate_index"],
        )
