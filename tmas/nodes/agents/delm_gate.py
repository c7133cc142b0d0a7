"""The verification gate a DeLM note passes before it enters the shared context."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tmas.answers.parsing import parse_verification
from tmas.llm.calls import Completion
from tmas.memory.dedup import find_duplicate
from tmas.memory.similarity import similarity_named
from tmas.nodes.prompts import PromptSet

if TYPE_CHECKING:  # the router loads the model stack; nodes only name it
    from tmas.llm.router import ModelRouter

_PLACEHOLDER = re.compile(
    r"\b(?:TODO|TBD|FIXME|XXX)\b|\[(?:insert|placeholder)|<[a-z _-]*placeholder[a-z _-]*>|"
    r"lorem ipsum|\.\.\.\s*$",
    re.IGNORECASE,
)


def deterministic_problems(
    note: str,
    evidence: str,
    existing: list[str],
    *,
    max_chars: int,
    dedup_threshold: float,
    similarity: str = "jaccard",
) -> list[str]:
    """Why a note fails the cheap checks (empty list: it passes); a duplicate is a near
    duplicate (:func:`~tmas.memory.dedup.find_duplicate`) by the similarity ``similarity``.

    Example:
        >>> deterministic_problems("x = 3", "", [], max_chars=100, dedup_threshold=0.8)
        ['no evidence']
        >>> deterministic_problems("x = TODO", "because", [], max_chars=100, dedup_threshold=0.8)
        ['placeholder text']
    """
    problems = []
    if not note.strip():
        problems.append("empty note")
    if len(note) + len(evidence) > max_chars:
        problems.append(f"longer than {max_chars} characters")
    if not evidence.strip():
        problems.append("no evidence")
    if _PLACEHOLDER.search(note) or _PLACEHOLDER.search(evidence):
        problems.append("placeholder text")
    if find_duplicate(note, existing, dedup_threshold, similarity) is not None:
        problems.append("duplicate of a note already on the board")
    return problems


@dataclass
class GateResult:
    """The gate's decision, its reasons and the judge's call (if one was made)."""

    accepted: bool
    reasons: list[str] = field(default_factory=list)
    judge_call: Completion | None = None


class VerificationGate:
    """Deterministic checks first; only a note that passes them goes to the LLM judge, a call
    of role ``role``."""

    def __init__(
        self,
        router: ModelRouter,
        *,
        role: str,
        max_chars: int,
        dedup_threshold: float,
        max_tokens: int,
        prompt_set: PromptSet | None = None,
        similarity: str = "jaccard",
    ) -> None:
        similarity_named(similarity)  # an unknown similarity is refused when the graph is built
        self.router = router
        self.role = role
        self.prompts = prompt_set or PromptSet()
        self.max_chars = max_chars
        self.dedup_threshold = dedup_threshold
        self.similarity = similarity
        self.max_tokens = max_tokens

    def check(
        self, problem: str, note: str, evidence: str, existing: list[str], seed: int
    ) -> GateResult:
        """Decide whether ``note`` may enter the shared context."""
        problems = deterministic_problems(
            note,
            evidence,
            existing,
            max_chars=self.max_chars,
            dedup_threshold=self.dedup_threshold,
            similarity=self.similarity,
        )
        if problems:
            return GateResult(False, problems)
        reply = self.router.complete(
            self.role,
            self.prompts.render("delm/judge_system"),
            self.prompts.render("delm/judge_user", problem=problem, note=note, evidence=evidence),
            self.max_tokens,
            seed,
            prompt="delm/judge_user",
        )
        verdict, score = parse_verification(reply.text).value  # type: ignore[misc]
        if verdict == "correct" and (score is None or score >= 0.5):
            return GateResult(True, [], reply)
        return GateResult(False, [f"judge: {verdict}"], reply)
