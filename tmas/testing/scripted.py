"""Scripted, deterministic replies for each TMAS role (used by fake models and servers)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from tmas.roles import Role, role_of_prompt


@dataclass(frozen=True)
class ScriptedReplies:
    """Role-aware canned replies; the solver's answer is picked by a hash of the prompt.

    Example:
        >>> replies = ScriptedReplies(answers=("18",))
        >>> "\\\\boxed{18}" in replies.reply("solver", "You are the solution agent", "2+16?")
        True
    """

    answers: Sequence[str] = ("18", "18", "17")
    verifier_score: int = 8
    strategies: Sequence[str] = field(
        default=("Set up an equation", "Work backwards", "Count case by case")
    )

    def _pick(self, options: Sequence[str], text: str) -> str:
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        return options[digest[0] % len(options)]

    def reply(self, role: Role | None, system: str, user: str, salt: str = "") -> str:
        """Return the canned reply of ``role`` to a prompt (``salt``, e.g. a seed, varies it)."""
        if role == "solver" and "Split the problem" in system:
            return "- What is the first quantity?\n- What is the second quantity?"
        if role == "solver" and "board of verified notes" in system:
            fact = self._pick(("the first quantity is 9", "the second quantity is 9"), user + salt)
            return f"Note: {fact}\nEvidence: read from the problem statement"
        if role == "summary" and "From the verified notes" in system:
            answer = self._pick(self.answers, user)
            return f"Adding the noted quantities gives {answer}.\n\\boxed{{{answer}}}"
        if role == "solver":
            answer = self._pick(self.answers, system + user + salt)
            return f"We compute step by step.\nThe result is {answer}.\n\\boxed{{{answer}}}"
        if role == "verifier":
            verdict = "correct" if self.verifier_score >= 5 else "incorrect"
            return (
                "Each step follows from the previous one.\n"
                f"Score: {self.verifier_score}/10\nVerdict: {verdict}"
            )
        if role == "summary":
            return "The verifiers agree the arithmetic is sound; the final step is checked."
        if role == "experience":
            return "- Verified: the arithmetic of the first step holds.\n- Pitfall: units dropped."
        if role == "guideline":
            return f"Strategy: {self._pick(self.strategies, user)}"
        return "I do not know which role I play."


def scripted_reply(replies: ScriptedReplies, messages: Sequence[dict], salt: str = "") -> str:
    """Reply to OpenAI-style ``messages`` (dicts with role and content) as the scripted agent.

    Example:
        >>> msgs = [{"role": "system", "content": "You are the summary agent."},
        ...         {"role": "user", "content": "..."}]
        >>> scripted_reply(ScriptedReplies(), msgs).startswith("The verifiers")
        True
    """
    system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    user = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") != "system")
    return replies.reply(role_of_prompt(system), system, user, salt)
