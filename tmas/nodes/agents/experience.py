"""The experience agent: extracts reliable conclusions and pitfalls from one rollout."""

from __future__ import annotations

from typing import Any

from tmas.answers.parsing import parse_bullets
from tmas.nodes.common import SteppedAgent, Steps, agent_update
from tmas.nodes.prompts import prompt_fields
from tmas.seeding import derive_seed


def kind_of(fact: str) -> str:
    """Classify a fact by its prefix.

    Example:
        >>> kind_of("Verified: x = 3"), kind_of("Pitfall: sign error"), kind_of("x > 0")
        ('conclusion', 'pitfall', 'note')
    """
    head = fact.lower()
    if head.startswith("verified"):
        return "conclusion"
    if head.startswith(("pitfall", "mistake", "avoid")):
        return "pitfall"
    return "note"


RELIABLE_SCORE = 0.5


def trusted(kind: str, mean_score: float | None) -> bool:
    """Whether a fact may enter the bank: a "verified" conclusion only from a rollout the
    verifiers accepted (pitfalls and notes from any rollout).

    Example:
        >>> trusted("conclusion", 0.2), trusted("conclusion", 0.9), trusted("pitfall", 0.0)
        (False, True, True)
    """
    if kind != "conclusion":
        return True
    return mean_score is not None and mean_score >= RELIABLE_SCORE


class ExtractExperience(SteppedAgent):
    """Node: propose experience-bank entries from one rollout and its summary."""

    def steps(self, task: dict[str, Any]) -> Steps:
        seed = derive_seed(
            self.config.seed, "experience", task["iteration"], task["candidate_index"]
        )
        reply = yield self.ctx.ask(prompt_fields(task), seed=seed)
        parsed = parse_bullets(reply.text, max_items=3)
        proposals = [
            {
                "text": fact,
                "kind": kind_of(fact),
                "iteration": task["iteration"],
                "source_index": task["candidate_index"],
            }
            for fact in parsed.value  # type: ignore[union-attr]
            if trusted(kind_of(fact), task.get("mean_score"))
        ]
        return agent_update(
            "experience_proposals",
            proposals,
            self.role,
            reply,
            parsed,
            iteration=task["iteration"],
            index=task["candidate_index"],
        )
