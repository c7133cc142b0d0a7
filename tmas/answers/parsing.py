"""Tolerant readers of model output: every function returns a value and, on trouble, a note.

Small models break formats; nothing here raises on garbage. Callers record the notes as
``ParseIssue`` entries in the run state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FALLBACK_ANSWER = re.compile(
    r"(?:final answer(?: is)?|the answer is|answer:)\s*[:=]?\s*\$?([^\n$]{1,60}?)\$?\s*(?:\.|$)",
    re.IGNORECASE | re.MULTILINE,
)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_SCORE = re.compile(r"score\s*[:=]?\s*\**\s*(-?\d+(?:\.\d+)?)\s*(?:/\s*(\d+(?:\.\d+)?))?", re.I)
_VERDICT = re.compile(r"verdict\s*[:=]?\s*\**\s*(correct|incorrect|wrong|right)", re.I)
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.*\S)\s*$")
_STRATEGY = re.compile(r"strategy\s*[:=]\s*(.+)", re.I)


@dataclass(frozen=True)
class Parsed:
    """A parsed value and, when the output did not follow the format, what went wrong."""

    value: object
    problem: str | None = None


def _boxed_contents(text: str) -> list[str]:
    found: list[str] = []
    start = 0
    while (pos := text.find("\\boxed", start)) != -1:
        brace = text.find("{", pos)
        if brace == -1 or text[pos + 6 : brace].strip():
            start = pos + 6
            continue
        depth, end = 0, brace
        for end in range(brace, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                break
        if depth != 0:
            break
        found.append(text[brace + 1 : end].strip())
        start = end + 1
    return found


def extract_answer(text: str) -> Parsed:
    """Return the last ``\\boxed{...}`` answer, falling back to "the answer is X" phrases.

    Example:
        >>> extract_answer("so \\\\boxed{\\\\frac{1}{2}}").value
        '\\\\frac{1}{2}'
        >>> extract_answer("The answer is 42.").problem
        'no \\\\boxed{} answer; used a plain-text answer'
        >>> extract_answer("The final answer to the problem was 21.").value
        '21'
        >>> extract_answer("So the final answer is $72$.").value
        '72'
        >>> extract_answer("The answer is 3,").value
        '3'
    """
    boxed = [b for b in _boxed_contents(text or "") if b]
    if boxed:
        return Parsed(boxed[-1])
    matches = _FALLBACK_ANSWER.findall(text or "")
    if matches:
        answer = matches[-1].strip().rstrip(",;:").strip()
        words = len(answer.split())
        if words > 3 or (words > 1 and not any(ch.isdigit() for ch in answer)):
            # a phrase, not an answer: keep its last number, if any
            numbers = _NUMBER.findall(answer)
            answer = numbers[-1] if numbers else ""
        if answer:
            return Parsed(answer, "no \\boxed{} answer; used a plain-text answer")
    return Parsed(None, "no answer found")


_UNIT_NOISE = re.compile(r"\\?\$|\\?%|\^\{?\\circ\}?|\u00b0")
_NUMBER_WITH_WORDS = re.compile(r"(-?[\d,]*\.?\d+)(?:\s+[A-Za-z][A-Za-z ]*)?")


def normalize_answer(answer: str | None) -> str | None:
    r"""Canonical form of an answer for voting: numbers compared by value, LaTeX and unit noise
    removed (``72``, ``72 clips``, ``\$72``, ``72\%`` and ``72.0`` are one answer).

    Example:
        >>> normalize_answer("$1,000.0$")
        '1000'
        >>> [normalize_answer(a) for a in ("\\text{ 18 dollars}", "\\$72", "72 clips", "3x")]
        ['18', '72', '72', '3x']
    """
    if answer is None:
        return None
    text = answer.strip().strip("$").strip()
    text = re.sub(r"\\(?:text|mathrm|textbf|mbox)\{([^{}]*)\}", r" \1 ", text)
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    text = text.replace("\\!", "").replace("\\,", "").replace("\\left", "").replace("\\right", "")
    text = _UNIT_NOISE.sub("", text)
    text = re.sub(r"^[a-zA-Z]\s*=\s*", "", text.strip()).strip().rstrip(".")
    number = _NUMBER_WITH_WORDS.fullmatch(text)
    if number is not None:
        value = float(number.group(1).replace(",", ""))
        return str(int(value)) if value.is_integer() else repr(value)
    return re.sub(r"\s+", "", text) or None


def parse_verification(text: str) -> Parsed:
    """Read ``(verdict, score in [0, 1])`` from a verifier's report.

    The score comes from "Score: s/10" (any scale); when it is missing, the verdict gives 1 or 0;
    when both are missing the value is ``("unknown", None)``.

    Example:
        >>> parse_verification("... Score: 7/10\\nVerdict: correct").value
        ('correct', 0.7)
    """
    verdict_match = _VERDICT.findall(text or "")
    verdict = "unknown"
    if verdict_match:
        verdict = "correct" if verdict_match[-1].lower() in ("correct", "right") else "incorrect"
    score: float | None = None
    score_match = _SCORE.findall(text or "")
    problems: list[str] = []
    if score_match:
        raw, scale = score_match[-1]
        top = float(scale) if scale else (10.0 if float(raw) > 1 else 1.0)
        score = min(max(float(raw) / top, 0.0), 1.0) if top > 0 else None
    else:
        problems.append("no score")
    if verdict == "unknown":
        problems.append("no verdict")
    if score is None and verdict != "unknown":
        score = 1.0 if verdict == "correct" else 0.0
    if verdict == "unknown" and score is not None:
        verdict = "correct" if score >= 0.5 else "incorrect"
    return Parsed((verdict, score), "; ".join(problems) or None)


def parse_bullets(text: str, max_items: int = 8, max_chars: int = 300) -> Parsed:
    """Read a bullet or numbered list into short items (headings ending in ':' dropped); text
    without a list gives no items.

    Example:
        >>> parse_bullets("- a is 3\\n- b is 4").value
        ['a is 3', 'b is 4']
    """
    lines = [ln for ln in (text or "").splitlines() if ln.strip()]
    items = [m.group(1) for ln in lines if (m := _BULLET.match(ln))]
    items = [item for item in items if not item.rstrip().endswith(":")]
    problem = None if items else ("no bullet list" if lines else "empty output")
    cleaned = [item[:max_chars].strip() for item in items if item.strip()]
    return Parsed(cleaned[:max_items], problem)


def parse_strategy(text: str, max_chars: int = 200) -> Parsed:
    """Read the one-line "Strategy: ..." a guideline agent writes (None without one: a bank
    must not fill with whatever a small model said first).

    Example:
        >>> parse_strategy("Strategy: work backwards from the total").value
        'work backwards from the total'
    """
    match = _STRATEGY.search(text or "")
    if match:
        return Parsed(match.group(1).strip()[:max_chars])
    return Parsed(None, "no 'Strategy:' line")
