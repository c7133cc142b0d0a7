"""Near duplicates: texts a similarity finds alike that state the very same numbers, the rule
both banks, the lifelong memory and DeLM's notes deduplicate by."""

from __future__ import annotations

import re

from tmas.memory.similarity import similarity_named

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def numbers_of(text: str) -> frozenset[str]:
    """The numbers a text states.

    Example:
        >>> sorted(numbers_of("48 in April, 24 in May"))
        ['24', '48']
    """
    return frozenset(_NUMBER.findall(text))


def find_duplicate(
    text: str, existing: list[str], threshold: float, similarity: str = "jaccard"
) -> int | None:
    """Index of the first item of ``existing`` that is a near duplicate of ``text``: it states
    the very same numbers (texts that differ only in their numbers state different, often
    contradicting, facts) and the similarity named ``similarity`` scores it at least
    ``threshold`` among the items that do.

    Example:
        >>> find_duplicate("total is 18", ["a b c", "the total is 18"], 0.7)
        1
        >>> find_duplicate("so the total is 72", ["so the total is 144"], 0.5) is None
        True
    """
    measure = similarity_named(similarity)
    numbers = numbers_of(text)
    candidates = [i for i, other in enumerate(existing) if numbers_of(other) == numbers]
    if not candidates:
        return None
    scores = measure(text, [existing[i] for i in candidates])
    return next((i for i, s in zip(candidates, scores, strict=True) if s >= threshold), None)


def is_near_duplicate(a: str, b: str, threshold: float, similarity: str = "jaccard") -> bool:
    """Whether ``b`` is a near duplicate of ``a`` (:func:`find_duplicate`).

    Example:
        >>> is_near_duplicate("so the total is 72", "so the total is 144", 0.5)
        False
        >>> is_near_duplicate("so the total is 72", "the total is 72", 0.5)
        True
    """
    return find_duplicate(a, [b], threshold, similarity) is not None
