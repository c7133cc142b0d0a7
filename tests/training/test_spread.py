"""Reward spread: :func:`zero_spread_groups` finds the GRPO groups whose scored totals are all
equal (left-out completions not counted, a lone scored completion has no spread);
:func:`spread_rows` keeps the rows a scripted policy solves sometimes but not always, records
their pass rate and reports the distribution, batch by batch. ``test_spread_cli.py`` covers
``tmas train filter``."""

from __future__ import annotations

import json

import pytest

from tests.training.spread_script import Prompt
from tests.training.spread_script import row as _row
from tests.training.spread_script import scripted as _scripted
from tmas.training.spread import zero_spread_groups
from tmas.training.spread_filter import SpreadReport, spread_rows

# zero_spread_groups


def test_groups_whose_totals_are_all_equal_have_zero_spread() -> None:
    assert zero_spread_groups([1.0, 1.0, 0.0, 0.0, 0.5, 0.5], 2) == [0, 1, 2]
    assert zero_spread_groups([1.0, 1.0, 1.0, 1.0], 4) == [0]


def test_groups_with_different_totals_have_spread() -> None:
    assert zero_spread_groups([1.0, 0.0, 0.0, 1.0, 0.5, 0.0], 2) == []
    assert zero_spread_groups([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0], 4) == [0]
    assert zero_spread_groups([0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], 4) == [1]


def test_left_out_completions_do_not_count() -> None:
    # The left-out completion does not break the tie of the scored ones, nor make one.
    assert zero_spread_groups([1.0, None, 1.0, 0.0, None, 1.0], 3) == [0]
    assert zero_spread_groups([None, None, None, None], 2) == [0, 1]


def test_a_group_with_one_scored_completion_has_no_spread() -> None:
    assert zero_spread_groups([1.0, None, None, 0.0, 1.0, None], 3) == [0]
    assert zero_spread_groups([None, 0.0, 1.0, 0.0], 2) == [0]


def test_group_size_one_means_every_group_has_zero_spread() -> None:
    assert zero_spread_groups([1.0, 0.0, None, 0.5], 1) == [0, 1, 2, 3]
    assert zero_spread_groups([], 1) == []


def test_a_short_last_group_is_judged_on_what_it_has() -> None:
    assert zero_spread_groups([1.0, 0.0, 1.0], 2) == [1]
    assert zero_spread_groups([1.0, 0.0, 1.0, 0.0, 1.0], 3) == []


def test_float_totals_compare_within_rounding() -> None:
    assert zero_spread_groups([1.5, 1.5, 1.5, 0.5], 2) == [0]
    assert zero_spread_groups([0.1 + 0.2, 0.3], 2) == [0]  # 0.30000000000000004 vs 0.3
    assert zero_spread_groups([1.5, 1.5001], 2) == []


# spread_rows with a scripted policy


def test_rows_always_or_never_solved_are_dropped_and_the_rest_kept() -> None:
    rows = [_row(f"question {i}", str(10 + i)) for i in range(5)]
    correct = [0, 4, 1, 3, 2]
    report = spread_rows(rows, _scripted(rows, correct, 4, []), samples=4)
    assert report.correct == correct
    assert [r["prompt"][-1]["content"] for r in report.kept] == [
        "question 2",
        "question 3",
        "question 4",
    ]
    assert [r["extra_info"]["pass_rate"] for r in report.kept] == [0.25, 0.75, 0.5]


def test_kept_rows_keep_every_other_column_and_extra_info_key() -> None:
    rows = [
        _row("kept", "5", parent_answer="4", guidelines=["Check the units"]),
        _row("never", "6"),
    ]
    rows[0]["custom_column"] = {"nested": [1, 2]}
    before = json.loads(json.dumps(rows))
    report = spread_rows(rows, _scripted(rows, [1, 0], 2, []), samples=2)
    (kept,) = report.kept
    assert {k: v for k, v in kept.items() if k != "extra_info"} == {
        k: v for k, v in before[0].items() if k != "extra_info"
    }
    assert kept["extra_info"] == {**before[0]["extra_info"], "pass_rate": 0.5}
    assert rows == before  # the input rows are not changed


def test_a_kept_row_without_extra_info_gets_one_with_its_pass_rate() -> None:
    row = _row("bare", "9")
    del row["extra_info"]
    report = spread_rows([row], _scripted([row], [2], 3, []), samples=3)
    assert report.kept[0]["extra_info"] == {"pass_rate": pytest.approx(2 / 3)}
    assert "extra_info" not in row


def test_the_summary_counts_rows_kept_solved_and_the_histogram() -> None:
    rows = [_row(f"q{i}", str(i)) for i in range(6)]
    correct = [0, 0, 4, 1, 3, 3]
    report = spread_rows(rows, _scripted(rows, correct, 4, []), samples=4)
    assert report.summary() == {
        "rows": 6,
        "kept": 3,
        "never_solved": 2,
        "always_solved": 1,
        "pass_rate": round(11 / 24, 4),
        "samples": 4,
        "histogram": {"0": 2, "1": 1, "2": 0, "3": 2, "4": 1},
    }
    assert SpreadReport(4).summary()["pass_rate"] == 0.0


def test_rows_are_sampled_in_batches_each_row_once_in_order() -> None:
    rows = [_row(f"q{i}", str(i)) for i in range(5)]
    correct = [1, 2, 0, 2, 1]
    calls: list[list[str]] = []
    report = spread_rows(rows, _scripted(rows, correct, 2, calls), samples=2, rows_per_batch=2)
    assert calls == [["q0", "q1"], ["q2", "q3"], ["q4"]]
    assert report.correct == correct
    assert [r["prompt"][-1]["content"] for r in report.kept] == ["q0", "q4"]


def test_the_sampler_gets_the_rows_chat_prompts_unchanged() -> None:
    rows = [_row("q", "1")]
    seen: list[list[Prompt]] = []

    def sample(prompts: list[Prompt]) -> list[list[str]]:
        seen.append(prompts)
        return [["\\boxed{1}", "\\boxed{2}"]]

    spread_rows(rows, sample, samples=2)
    assert seen == [[rows[0]["prompt"]]]


def test_a_sampler_answering_for_too_few_prompts_is_an_error() -> None:
    rows = [_row("a", "1"), _row("b", "2")]
    with pytest.raises(ValueError):
        spread_rows(rows, lambda prompts: [["\\boxed{1}", "\\boxed{2}"]], samples=2)


# tmas train filter
