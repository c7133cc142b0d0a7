"""Votes over candidate answers: tallies by normalized answer, weighted by verification."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from tmas.answers.parsing import normalize_answer

NEUTRAL_SCORE = 0.5
MIN_WEIGHT = 1e-3
MAX_VOTE_ENTRIES = 64  # distinct answers kept in the running vote (the heaviest)


def tally(weighted_answers: Iterable[tuple[str | None, float]]) -> dict[str, float]:
    """Sum weights per distinct answer (grouped by normalized form, keyed by first spelling).

    Example:
        >>> tally([("18", 1.0), ("18.0", 0.5), ("7", 1.0), (None, 1.0)])
        {'18': 1.5, '7': 1.0}
    """
    totals: dict[str, float] = defaultdict(float)
    spelling: dict[str, str] = {}
    for answer, weight in weighted_answers:
        key = normalize_answer(answer)
        if key is None:
            continue
        spelling.setdefault(key, answer.strip())  # type: ignore[union-attr]
        totals[key] += weight
    return {spelling[k]: round(v, 6) for k, v in totals.items()}


def weighted_vote(answers: list[str | None], scores: list[float | None]) -> dict[str, float]:
    """Sum of verification scores per distinct answer (unscored candidates weigh 0.5).

    Example:
        >>> weighted_vote(["18", "18.0", "17", None], [0.9, 0.5, 1.0, 1.0])
        {'18': 1.4, '17': 1.0}
    """
    return tally(
        (answer, max(NEUTRAL_SCORE if score is None else score, MIN_WEIGHT))
        for answer, score in zip(answers, scores, strict=True)
    )


def winner(vote: dict[str, float]) -> str | None:
    """The answer with the largest weight (first seen wins ties).

    Example:
        >>> winner({"3": 1.0, "4": 2.0}), winner({})
        ('4', None)
    """
    return max(vote, key=vote.__getitem__) if vote else None


def add_vote(totals: dict[str, float], vote: dict[str, float]) -> dict[str, float]:
    """The running vote with one more iteration's vote added (the heaviest answers kept).

    Example:
        >>> add_vote({"18": 1.0}, {"18.0": 0.5, "7": 1.0})
        {'18': 1.5, '7': 1.0}
    """
    combined = tally([*totals.items(), *vote.items()])
    if len(combined) <= MAX_VOTE_ENTRIES:
        return combined
    kept = sorted(combined, key=combined.__getitem__, reverse=True)[:MAX_VOTE_ENTRIES]
    return {answer: combined[answer] for answer in combined if answer in kept}


def mean_score(scores: list[float | None]) -> float | None:
    """Mean of the known scores (None when none is known).

    Example:
        >>> mean_score([0.5, None, 1.0])
        0.75
    """
    known = [s for s in scores if s is not None]
    return sum(known) / len(known) if known else None
