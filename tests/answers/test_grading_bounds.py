"""Grading is bounded in time: a pathological answer counts as wrong, and grading goes on."""

from __future__ import annotations

import time

from tmas.answers.grading import BoundedGrader, is_correct


def test_pathological_answer_times_out_and_counts_as_wrong() -> None:
    grader = BoundedGrader(timeout_s=2.0)
    try:
        start = time.monotonic()
        assert is_correct("9^{9^{9^{9}}}", "18", grader) is False
        assert time.monotonic() - start < 10
        assert grader.timeouts == 1
        assert is_correct("\\frac{36}{2}", "18", grader) is True
        assert is_correct("19", "18", grader) is False
    finally:
        grader.close()


def test_plain_comparison_needs_no_worker() -> None:
    grader = BoundedGrader(timeout_s=2.0)
    assert is_correct("1,000", "1000", grader) is True
    assert grader._process is None
