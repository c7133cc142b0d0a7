"""Scripted, deterministic replies for each TMAS role (used by fake models and servers)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from tmas.roles import BUILTIN_ROLES, Role


@dataclass(frozen=True)
class ScriptedReplies:
    """Role-aware canned replies; the solver's answer is picked by a hash of the prompt.

    Replies are chosen by the call's role and prompt key (the ``tmas_role``/``tmas_prompt``
    metadata of the call), never by the wording of the prompt.

    Example:
        >>> replies = ScriptedReplies(answers=("18",))
        >>> "\\\\boxed{18}" in replies.reply("solver", "You solve things.", "2+16?")
        True
    """

    answers: Sequence[str] = ("18", "18", "17")
    verifier_score: int = 8
    strategies: Sequence[str] = field(
        default=("Set up an equation", "Work backwards", "Count case by case")
    )
    proof_steps: Sequence[str] = field(
        default=("Assume the contrary; a contradiction follows.", "Induct on n.",
                 "Expand both sides and compare.")
    )  # fmt: skip
    judge_score: int = 8

    def _pick(self, options: Sequence[str], text: str) -> str:
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        return options[digest[0] % len(options)]

    def reply(
        self,
        role: Role | None,
        system: str,
        user: str,
        salt: str = "",
        prompt: str | None = None,
    ) -> str:
        """Return the canned reply of ``role`` to a prompt (``salt``, e.g. a seed, varies it;
        ``prompt`` is the key of the prompt's template). A declared role rendering a built-in
        role's template (a ``verify`` node playing ``critic`` renders ``verifier/user``) gets
        that built-in role's reply."""
        role = acting_role(role, prompt)
        if prompt == "delm/planner_user":
            return "- What is the first quantity?\n- What is the second quantity?"
        if prompt == "delm/worker_user":
            fact = self._pick(("the first quantity is 9", "the second quantity is 9"), user + salt)
            return f"Note: {fact}\nEvidence: read from the problem statement"
        if prompt == "mas/judger":
            answer = self._pick(self.answers, user + salt)
            return f"From the notes, the result is {answer}.\n\\boxed{{{answer}}}"
        if prompt == "delm/answer_user":
            answer = self._pick(self.answers, user)
            return f"Adding the noted quantities gives {answer}.\n\\boxed{{{answer}}}"
        if prompt is not None and prompt.startswith("solver/proof_"):
            step = self._pick(self.proof_steps, system + user + salt)
            return f"Proof. {step} This completes the proof."
        if role == "proof_judge":
            verdict = "correct" if self.judge_score >= 7 else "incorrect"
            score = self.judge_score
            return f"The proof follows the reference.\nScore: {score}/10\nVerdict: {verdict}"
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
        if role:
            return f"A reply of the {role} agent about the problem."
        return "I do not know which role I play."


def acting_role(role: Role | None, prompt: str | None) -> Role | None:
    """The built-in role whose template a call renders (its prompt key's group), else the
    call's own role.

    Example:
        >>> acting_role("critic", "verifier/user"), acting_role("judge", "judge/user")
        ('verifier', 'judge')
    """
    group = (prompt or "").partition("/")[0]
    return group if group in BUILTIN_ROLES else role


def scripted_reply(
    replies: ScriptedReplies,
    messages: Sequence[dict],
    salt: str = "",
    *,
    role: Role | None = None,
    prompt: str | None = None,
) -> str:
    """Reply to OpenAI-style ``messages`` (dicts with role and content) as the scripted agent
    playing ``role`` (with the prompt template ``prompt``).

    Example:
        >>> msgs = [{"role": "system", "content": "Condense the reports."},
        ...         {"role": "user", "content": "..."}]
        >>> scripted_reply(ScriptedReplies(), msgs, role="summary").startswith("The verifiers")
        True
    """
    system = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    user = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") != "system")
    return replies.reply(role, system, user, salt, prompt)
