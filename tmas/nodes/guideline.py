"""The guideline agent: names the high-level strategy one rollout tried."""

from __future__ import annotations

from typing import Any

from tmas.config import TMASConfig
from tmas.llm.router import ModelRouter
from tmas.nodes import prompts
from tmas.nodes.common import agent_update
from tmas.parsing import parse_strategy
from tmas.seeding import derive_seed


class ExtractGuideline:
    """Node: propose a guideline-bank entry (the strategy used) from one rollout."""

    def __init__(self, router: ModelRouter, config: TMASConfig) -> None:
        self.router = router
        self.config = config

    def __call__(self, task: dict[str, Any]) -> dict[str, Any]:
        reply = self.router.complete(
            "guideline",
            prompts.GUIDELINE_SYSTEM,
            prompts.GUIDELINE_USER.format(problem=task["problem"], solution=task["solution"]),
            self.config.max_tokens_for("guideline"),
            derive_seed(self.config.seed, "guideline", task["iteration"], task["candidate_index"]),
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
