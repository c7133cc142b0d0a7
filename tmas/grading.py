"""Grading answers against a gold answer with math-verify.

math-verify's own timeouts use ``signal.alarm``, which fails outside the main thread, so they
are switched off here; answers are short (a ``\\boxed{}`` content capped in length), which
bounds the work.
"""

from __future__ import annotations

import logging

from tmas.parsing import normalize_answer

MAX_ANSWER_CHARS = 200

logging.getLogger("math_verify").setLevel(logging.ERROR)


def is_correct(answer: str | None, gold: str | None) -> bool:
    """True when ``answer`` is mathematically equivalent to ``gold``; garbage is just wrong.

    Example:
        >>> is_correct("\\\\frac{1}{2}", "0.5"), is_correct("17", "18"), is_correct(None, "1")
        (True, False, False)
    """
    if answer is None or gold is None:
        return False
    if normalize_answer(answer) == normalize_answer(gold):
        return True
    if len(answer) > MAX_ANSWER_CHARS:
        return False
    try:
        from math_verify import parse, verify

        gold_parsed = parse(f"${gold}$", parsing_timeout=None)
        answer_parsed = parse(f"${answer}$", parsing_timeout=None)
        if not gold_parsed or not answer_parsed:
            return False
        return bool(verify(gold_parsed, answer_parsed, timeout_seconds=None))
    except Exception:  # noqa: BLE001 - a grader must never crash a run
        return False


def pass_at_1(answers: list[str | None], gold: str | None) -> float | None:
    """Mean correctness of the candidates' answers (None without a gold answer).

    Example:
        >>> pass_at_1(["18", "17", None, "18.0"], "18")
        0.5
    """
    if gold is None or not answers:
        return None
    return sum(is_correct(a, gold) for a in answers) / len(answers)
