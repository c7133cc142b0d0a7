"""The generative novelty judge of the explore reward: does a solution's strategy differ from
every strategy in the guideline bank it was given? Any chat model of the framework judges;
its prompt is a template file (``{problem}``, ``{strategies}``, ``{solution}``): the bundled
``judge/novelty`` template beside the agents' prompts, or the user's own."""

from __future__ import annotations

import re
from pathlib import Path

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from tmas.nodes.prompts import PromptSet, bullet_list, clip

VERDICT = re.compile(r"novel\s*[:=]\s*\**\s*(yes|no)\b", re.IGNORECASE)
LEADING_VERDICT = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
_QUOTES = r"[\s*\"'`<>\[\]()]*"
CHOICE = re.compile(
    rf"(?:novel\s*[:=]{_QUOTES})?\b(yes|no)\b{_QUOTES}(?:\||/|\bor\b){_QUOTES}"
    rf"(?:novel\s*[:=]{_QUOTES})?\b(yes|no)\b",
    re.IGNORECASE,
)
"""Both verdicts offered as a choice ("Novel: yes or Novel: no", "Novel: yes|no"): the
instruction echoed, not a verdict."""
SOLUTION_CHARS = 3000


class JudgeError(RuntimeError):
    """The judge failed (its call raised, or its reply carried no verdict)."""


def default_template() -> str:
    """The bundled judge prompt.

    Example:
        >>> "{strategies}" in default_template()
        True
    """
    return PromptSet().template("judge/novelty")


def load_template(path: str | Path | None) -> str:
    """The judge prompt in ``path`` (the bundled one for None); ValueError when it lacks a
    field the judge fills.

    Example:
        >>> load_template(None) == default_template()
        True
    """
    text = default_template() if path is None else Path(path).read_text(encoding="utf-8")
    missing = [f for f in ("{problem}", "{strategies}", "{solution}") if f not in text]
    if missing:
        raise ValueError(f"judge prompt {path} lacks {', '.join(missing)}")
    return text


def parse_verdict(reply: str) -> bool:
    """The judge's verdict: the last ``Novel: yes|no`` of its reply, or a reply that starts
    with yes or no (small judges often answer so); JudgeError otherwise. Both verdicts offered
    as a choice, as the instruction words them (``"Novel: yes" or "Novel: no"``,
    ``Novel: yes|no``, ``yes/no``), are an echo of the instruction and never read as a verdict,
    whether the judge repeats them before or after its own.

    Example:
        >>> parse_verdict("Both use algebra.\\nNovel: no"), parse_verdict("Yes, it differs.")
        (False, True)
        >>> parse_verdict('Novel: no\\n(Answer with exactly "Novel: yes" or "Novel: no".)')
        False
        >>> parse_verdict("Format: Novel: yes|no\\nIt counts on a number line. Novel: yes")
        True
    """
    verdicts = CHOICE.sub(_unless_one_verdict, reply)
    found = VERDICT.findall(verdicts) or LEADING_VERDICT.findall(verdicts)
    if not found:
        raise JudgeError(f"no 'Novel: yes|no' verdict in the judge's reply: {clip(reply, 80)!r}")
    return found[-1].lower() == "yes"


def _unless_one_verdict(choice: re.Match[str]) -> str:
    """A choice of both verdicts removed; the same verdict twice kept."""
    first, second = (word.lower() for word in choice.groups())
    return choice.group(0) if first == second else " "


class NoveltyJudge:
    """Asks ``model`` whether a solution's strategy is new against a guideline bank.

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> judge = NoveltyJudge(FakeListChatModel(responses=["Novel: yes"]))
        >>> judge.novelty("1+1?", ["Count on fingers"], "Use a number line.")
        1.0
    """

    def __init__(
        self, model: BaseChatModel, template: str | None = None, max_tokens: int = 64
    ) -> None:
        self.model = model
        self.template = template or default_template()
        self.max_tokens = max_tokens

    def novelty(self, problem: str, strategies: list[str], solution: str) -> float:
        """1.0 when the judge finds the strategy new (or the bank is empty), else 0.0;
        JudgeError when the judge fails."""
        if not strategies:
            return 1.0
        prompt = self.template.format(
            problem=problem,
            strategies=bullet_list(strategies),
            solution=clip(solution, SOLUTION_CHARS),
        )
        try:
            reply = self.model.invoke(
                [HumanMessage(prompt)],
                max_tokens=self.max_tokens,
                config={"metadata": {"tmas_role": "judge"}},
            )
        except Exception as exc:  # noqa: BLE001 - any failure of the judge is recorded
            raise JudgeError(f"judge call failed: {type(exc).__name__}: {exc}") from exc
        return 1.0 if parse_verdict(str(reply.content)) else 0.0
