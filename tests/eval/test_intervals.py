"""Paired differences with a bootstrap interval: the interval holds the difference, narrows
with more problems, excludes zero for a clear effect and includes it for none, and refuses
unpaired scores."""

from __future__ import annotations

import random

import pytest

from tmas.eval.intervals import paired_difference


def test_a_clear_gain_excludes_zero_and_no_gain_includes_it() -> None:
    rng = random.Random(1)
    base = [rng.random() < 0.4 for _ in range(100)]
    better = [b or rng.random() < 0.4 for b in base]  # fixes about 24 of the 60 misses
    gain = paired_difference(base, better)
    assert gain.low <= gain.difference <= gain.high and gain.low > 0
    same = paired_difference(base, [rng.random() < 0.4 for _ in range(100)])
    assert same.low < 0 < same.high or same.difference == 0


def test_the_interval_narrows_with_more_problems() -> None:
    rng = random.Random(2)
    widths = []
    for n in (20, 400):
        base = [rng.random() < 0.5 for _ in range(n)]
        treated = [rng.random() < 0.6 for _ in range(n)]
        result = paired_difference(base, treated)
        widths.append(result.high - result.low)
    assert widths[1] < widths[0] / 2


def test_identical_scores_give_a_zero_width_interval_and_unpaired_are_refused() -> None:
    tied = paired_difference([1, 0, 1], [1, 0, 1])
    assert (tied.difference, tied.low, tied.high, tied.problems) == (0.0, 0.0, 0.0, 3)
    with pytest.raises(ValueError, match="need paired scores"):
        paired_difference([1, 0], [1])
    with pytest.raises(ValueError):
        paired_difference([], [])
