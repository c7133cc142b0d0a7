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


def find_duplicate(text: str, existing: list[str], threshold: float) -> int | None:
    """Index of the first item of ``existing`` at least ``threshold`` similar to ``text``.

    Example:
        >>> find_duplicate("total is 18", ["a b c", "the total is 18"], 0.7)
        1
    """
    for i, other in enumerate(existing):
        if jaccard(text, other) >= threshold:
            return i
    return None
