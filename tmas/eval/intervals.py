"""Means and paired differences with bootstrap 95% intervals: problems resampled with
replacement and, when each problem was run under several seeds, the seeds resampled too, so an
interval covers both sources of variation. What an accuracy difference needs before it means
anything.

Two designs: *nested* (the default) resamples the observations of each drawn problem on their
own, right when they are independent per problem (several pairs of one problem, sampling
seeds); *crossed* resamples the seed columns once per draw for every problem, right when a
seed is shared across problems (a training seed shifts every answer of its model at once,
which nested resampling cannot see). Crossed needs the same seeds for every problem and is the
more cautious of the two."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

Scores = Sequence[float | bool]


@dataclass(frozen=True)
class PairedDifference:
    """``treated`` minus ``baseline`` mean score on the same problems, and its interval."""

    difference: float
    low: float
    high: float
    problems: int

    def describe(self, unit: float = 100.0) -> str:
        """The difference and interval, in points by default.

        Example:
            >>> PairedDifference(0.15, 0.05, 0.25, 100).describe()
            '+15.0 points (95% interval +5.0 to +25.0, 100 problems)'
        """
        return (
            f"{self.difference * unit:+.1f} points (95% interval {self.low * unit:+.1f} to "
            f"{self.high * unit:+.1f}, {self.problems} problems)"
        )


def bootstrap_mean(
    scores: Sequence[Scores], draws: int = 10_000, seed: int = 0, crossed: bool = False
) -> tuple[float, float, float]:
    """The mean of ``scores`` (one list per problem, one score per seed) with a percentile
    bootstrap 95% interval: each draw resamples problems and, nested, the seeds of each drawn
    problem, or, ``crossed``, one draw of seed columns shared by every problem. ValueError when
    there is nothing to average, or when ``crossed`` problems have different numbers of seeds.

    Example:
        >>> mean, low, high = bootstrap_mean([[1, 1], [0, 1], [0, 0], [1, 0]], draws=2000)
        >>> mean, 0.0 <= low < mean < high <= 1.0
        (0.5, True)
        >>> bootstrap_mean([[1], [1]], draws=100)
        (1.0, 1.0, 1.0)
        >>> bootstrap_mean([[1, 0]] * 50, draws=2000, crossed=True)  # seed 1 failed everything
        (0.5, 0.0, 1.0)
    """
    table = [[float(s) for s in problem] for problem in scores]
    if not table or not all(table):
        raise ValueError("need at least one score for every problem, and one problem")
    n, rng = len(table), random.Random(seed)
    mean = sum(sum(row) / len(row) for row in table) / n
    if crossed:
        means = _crossed_means(table, draws, rng)
    elif all(len(row) == 1 for row in table):
        flat = [row[0] for row in table]
        means = [sum(rng.choices(flat, k=n)) / n for _ in range(draws)]
    else:
        means = []
        for _ in range(draws):
            total = 0.0
            for row in rng.choices(table, k=n):
                total += sum(rng.choices(row, k=len(row))) / len(row)
            means.append(total / n)
    means.sort()
    return mean, means[int(0.025 * draws)], means[int(0.975 * draws) - 1]


def _crossed_means(table: list[list[float]], draws: int, rng: random.Random) -> list[float]:
    """Bootstrap means of a problems x seeds table, seed columns and problem rows each drawn
    with replacement, the same columns for every row of a draw."""
    width = len(table[0])
    if any(len(row) != width for row in table):
        raise ValueError(
            "a crossed interval needs the same seeds for every problem; "
            f"got {sorted({len(row) for row in table})} seeds per problem"
        )
    n, by_columns, means = len(table), {}, []
    for _ in range(draws):
        columns = tuple(sorted(rng.choices(range(width), k=width)))
        if columns not in by_columns:
            by_columns[columns] = [sum(row[c] for c in columns) / width for row in table]
        means.append(sum(rng.choices(by_columns[columns], k=n)) / n)
    return means


def paired_difference(
    baseline: Scores,
    treated: Scores,
    draws: int = 10_000,
    seed: int = 0,
) -> PairedDifference:
    """The mean of ``treated - baseline`` over paired problems with a percentile bootstrap 95%
    interval; ValueError when the two do not pair up or are empty.

    Example:
        >>> result = paired_difference([0, 0, 1, 1], [1, 1, 1, 1], draws=2000)
        >>> result.difference, result.low >= 0.0, result.high <= 1.0
        (0.5, True, True)
    """
    if len(baseline) != len(treated) or not baseline:
        raise ValueError(f"need paired scores, got {len(baseline)} and {len(treated)}")
    return paired_seed_difference([[b] for b in baseline], [[t] for t in treated], draws, seed)


def paired_seed_difference(
    baseline: Sequence[Scores],
    treated: Sequence[Scores],
    draws: int = 10_000,
    seed: int = 0,
    crossed: bool = False,
) -> PairedDifference:
    """``treated - baseline`` paired by problem and seed (one list per problem, one score per
    seed in the same order on both sides), with the bootstrap interval of
    :func:`bootstrap_mean` (nested, or ``crossed``); ValueError when the two do not pair up.

    Example:
        >>> result = paired_seed_difference([[0, 1], [1, 1], [0, 0]], [[1, 1], [1, 1], [1, 0]],
        ...                                 draws=2000)
        >>> round(result.difference, 3), result.problems, result.high <= 1.0
        (0.333, 3, True)
    """
    if len(baseline) != len(treated) or not baseline:
        raise ValueError(f"need paired scores, got {len(baseline)} and {len(treated)} problems")
    diffs = []
    for number, (b, t) in enumerate(zip(baseline, treated, strict=True), start=1):
        if len(b) != len(t) or not b:
            raise ValueError(f"problem {number}: {len(b)} and {len(t)} seeds do not pair up")
        diffs.append([float(x) - float(y) for y, x in zip(b, t, strict=True)])
    mean, low, high = bootstrap_mean(diffs, draws, seed, crossed)
    return PairedDifference(mean, low, high, len(diffs))
