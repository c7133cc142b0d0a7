"""Leaving out held-out problems that a training file already holds: exact copies, copies that
differ only in case, spacing, punctuation or number formatting, and near copies (the same
numbers in the same order and mostly the same words: a templated problem with its values kept;
or, for generated problems that name their ``kind``, the same kind with the same numbers).
A held-out set that overlaps the training rows measures recall, not reasoning."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tmas.eval.data import Problem

_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_WORD = re.compile(r"[a-z]+")


def normalised(text: str) -> str:
    """The text with case, spacing, punctuation and thousands separators ignored.

    Example:
        >>> normalised("Tom has 1,000 apples!") == normalised("tom  has 1000 apples")
        True
    """
    text = _NUMBER.sub(lambda m: m.group().replace(",", ""), text.lower())
    return " ".join(re.findall(r"[a-z]+|\d+(?:\.\d+)?", text))


def numbers_of(text: str) -> tuple[str, ...]:
    """The numbers of a text in order, thousands separators and trailing ``.0`` dropped.

    Example:
        >>> numbers_of("3 boxes of 1,200 pens cost $4.50 or 2.0 each")
        ('3', '1200', '4.50', '2')
    """
    found = [m.group().replace(",", "").rstrip(",") for m in _NUMBER.finditer(text)]
    return tuple(n[:-2] if n.endswith(".0") else n for n in found)


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def word_overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """The Jaccard overlap of two word sets (1.0 for two empty ones).

    Example:
        >>> word_overlap(frozenset("abc"), frozenset("abd"))
        0.5
    """
    return len(a & b) / len(a | b) if a | b else 1.0


@dataclass
class Overlap:
    """What deduplication left out: exact, normalised and near copies of training rows."""

    exact: list[str] = field(default_factory=list)
    normalised: list[str] = field(default_factory=list)
    near: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Problems left out.

        Example:
            >>> Overlap(exact=["a"], near=["b", "c"]).total
            3
        """
        return len(self.exact) + len(self.normalised) + len(self.near)

    def record(self) -> dict[str, object]:
        """For the study's design file and report.

        Example:
            >>> Overlap(near=["p3"]).record()["near"]
            1
        """
        return {
            "exact": len(self.exact),
            "normalised": len(self.normalised),
            "near": len(self.near),
            "left_out": self.exact + self.normalised + self.near,
        }


class TrainingIndex:
    """The training problems, indexed for the three kinds of copy.

    Example:
        >>> index = TrainingIndex(["Ann has 3 cats and 4 dogs. How many pets?"])
        >>> index.copy_kind("Ann has 3 cats and 4 dogs. How many pets?")
        'exact'
        >>> index.copy_kind("ann has 3 cats and 4 dogs how many pets")
        'normalised'
        >>> index.copy_kind("Bea has 3 cats and 4 dogs. How many pets?")
        'near'
        >>> index.copy_kind("Ann has 5 cats and 4 dogs. How many pets?") is None
        True
        >>> kinded = TrainingIndex([Problem(id="t", problem="3 pens and 4 more?", answer="7",
        ...                                 kind="add")])
        >>> kinded.copy_kind("Ben buys 3 cups, then 4 others. In all?", "add")
        'near'
    """

    def __init__(self, texts: Iterable[str | Problem], near_overlap: float = 0.7) -> None:
        self.near_overlap = near_overlap
        self.exact: set[str] = set()
        self.normal: set[str] = set()
        self.by_numbers: dict[tuple[str, ...], list[frozenset[str]]] = {}
        self.kind_numbers: set[tuple[str, tuple[str, ...]]] = set()
        for item in texts:
            text = item if isinstance(item, str) else item.problem
            if not isinstance(item, str) and item.kind:
                self.kind_numbers.add((item.kind, numbers_of(text)))
            self.exact.add(text.strip())
            self.normal.add(normalised(text))
            numbers = numbers_of(text)
            if numbers:  # without numbers, "same numbers" says nothing
                self.by_numbers.setdefault(numbers, []).append(_words(text))

    def copy_kind(self, text: str, kind: str | None = None) -> str | None:
        """``exact``, ``normalised`` or ``near`` when a training problem is such a copy of
        ``text`` (of problem kind ``kind``, when known), else None."""
        if text.strip() in self.exact:
            return "exact"
        if normalised(text) in self.normal:
            return "normalised"
        if kind and (kind, numbers_of(text)) in self.kind_numbers:
            return "near"
        words = _words(text)
        for other in self.by_numbers.get(numbers_of(text), ()):
            if word_overlap(words, other) >= self.near_overlap:
                return "near"
        return None


def deduplicated(
    problems: Sequence[Problem], training: Sequence[str | Problem], near_overlap: float = 0.7
) -> tuple[list[Problem], Overlap]:
    """``problems`` without the copies of a training text, and what was left out (by id).

    Example:
        >>> kept, left = deduplicated([Problem(id="a", problem="2 + 2?", answer="4"),
        ...     Problem(id="b", problem="3 + 5?", answer="8")], ["2+2 ?"])
        >>> [p.id for p in kept], left.normalised
        (['b'], ['a'])
    """
    index = TrainingIndex(training, near_overlap)
    kept, overlap = [], Overlap()
    for problem in problems:
        kind = index.copy_kind(problem.problem, problem.kind)
        if kind is None:
            kept.append(problem)
        else:
            getattr(overlap, "normalised" if kind == "normalised" else kind).append(problem.id)
    return kept, overlap
