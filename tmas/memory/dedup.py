"""Word-set Jaccard similarity, the measure both banks deduplicate by."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")


def word_set(text: str) -> frozenset[str]:
    """Lower-cased words and numbers of ``text``.

    Example:
        >>> sorted(word_set("x = 3.5, so X is 3.5"))
        ['3.5', 'is', 'so', 'x']
    """
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the word sets of ``a`` and ``b`` (1.0 for two empty texts).

    Example:
        >>> jaccard("the total is 18", "total is 18")
        0.75
    """
    sa, sb = word_set(a), word_set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def numbers_of(text: str) -> frozenset[str]:
    """The numbers a text states.

    Example:
        >>> sorted(numbers_of("48 in April, 24 in May"))
        ['24', '48']
    """
    return frozenset(_NUMBER.findall(text))


def is_near_duplicate(a: str, b: str, threshold: float) -> bool:
    """Same claim: Jaccard similarity at least ``threshold`` and the very same numbers.

    Texts that differ only in their numbers state different (often contradicting) facts.

    Example:
        >>> is_near_duplicate("so the total is 72", "so the total is 144", 0.5)
        False
        >>> is_near_duplicate("so the total is 72", "the total is 72", 0.5)
        True
    """
    return numbers_of(a) == numbers_of(b) and jaccard(a, b) >= threshold


def find_duplicate(text: str, existing: list[str], threshold: float) -> int | None:
    """Index of the first item of ``existing`` that is a near duplicate of ``text``.

    Example:
        >>> find_duplicate("total is 18", ["a b c", "the total is 18"], 0.7)
        1
    """
    for i, other in enumerate(existing):
        if is_near_duplicate(text, other, threshold):
            return i
    return None
