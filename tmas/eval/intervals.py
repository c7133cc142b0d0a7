"""Paired differences between two systems on the same problems, with a bootstrap interval
(problems resampled with replacement): what an accuracy difference needs before it means
anything."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass


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


def paired_difference(
    baseline: Sequence[float | bool],
    treated: Sequence[float | bool],
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
    diffs = [float(t) - float(b) for b, t in zip(baseline, treated, strict=True)]
    n, rng = len(diffs), random.Random(seed)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(draws))
    return PairedDifference(
        sum(diffs) / n, means[int(0.025 * draws)], means[int(0.975 * draws) - 1], n
    )
