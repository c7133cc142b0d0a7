"""Paired differences with a bootstrap interval: the interval holds the difference, narrows
with more problems, excludes zero for a clear effect and includes it for none, and refuses
unpaired scores."""

from __future__ import annotations

import random

import pytest

from tmas.eval.intervals import bootstrap_mean, paired_difference, paired_seed_difference


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


def test_the_two_level_interval_covers_seed_variation_that_problem_means_hide() -> None:
    """Every problem right at one seed and wrong at the other: resampling problems alone sees
    20 identical means (a zero-width interval); resampling each drawn problem's seeds too does
    not pretend the seeds agreed."""
    table = [[1, 0]] * 20
    mean, low, high = bootstrap_mean(table, draws=4000)
    assert mean == 0.5 and low < 0.4 and high > 0.6
    means_only = bootstrap_mean([[sum(row) / 2] for row in table], draws=4000)
    assert means_only == (0.5, 0.5, 0.5)


def test_paired_seed_differences_pair_by_problem_and_seed() -> None:
    baseline = [[0, 0], [1, 1], [0, 1]]
    treated = [[1, 1], [1, 1], [0, 1]]
    result = paired_seed_difference(baseline, treated, draws=4000)
    assert result.difference == pytest.approx(1 / 3) and result.problems == 3
    assert result.low >= 0.0 and result.high <= 1.0
    with pytest.raises(ValueError, match="problem 2: 2 and 1 seeds"):
        paired_seed_difference(baseline, [[1, 1], [1], [0, 1]])


def test_a_crossed_interval_sees_a_seed_that_moves_every_problem() -> None:
    """Seed 0 solves about 70% of the problems and seed 1 about 30% (two trainings that came
    out differently): resampling each problem's seeds on their own averages the shift away and
    gives about +-8 points; resampling the seed columns once per draw spans both trainings."""
    rng = random.Random(3)
    table = [[float(rng.random() < 0.7), float(rng.random() < 0.3)] for _ in range(100)]
    nested = bootstrap_mean(table)
    crossed = bootstrap_mean(table, crossed=True)
    assert nested[0] == crossed[0]
    assert nested[2] - nested[1] < 0.2 and crossed[2] - crossed[1] > 0.4
    assert crossed[1] < 0.32 and crossed[2] > 0.68
    baseline = [[float(rng.random() < 0.5)] * 2 for _ in range(100)]
    crossed_gain = paired_seed_difference(baseline, table, crossed=True)
    nested_gain = paired_seed_difference(baseline, table)
    assert crossed_gain.difference == nested_gain.difference
    assert crossed_gain.high - crossed_gain.low > 1.8 * (nested_gain.high - nested_gain.low)


def test_seeds_that_agree_give_the_same_crossed_and_nested_interval() -> None:
    rng = random.Random(4)
    table = [[float(rng.random() < 0.5)] * 3 for _ in range(80)]
    crossed = bootstrap_mean(table, crossed=True)
    one_seed = bootstrap_mean([row[:1] for row in table])
    assert crossed[0] == one_seed[0]
    assert crossed[1:] == pytest.approx(one_seed[1:], abs=0.02)  # draws differ, not the design


def test_a_crossed_interval_refuses_problems_with_different_seeds() -> None:
    with pytest.raises(ValueError, match="the same seeds for every problem; got \\[1, 2\\]"):
        bootstrap_mean([[1, 0], [1]], crossed=True)
