"""Tables of runs and iterations for the terminal."""

from __future__ import annotations

import time
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from tmas.runs import RunRecord
from tmas.terminal import plain

PROBLEM_HEAD = 18
ANSWER_WIDTH = 40


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def mode_counts(modes: list[str]) -> str:
    """Compact mode tally.

    Example:
        >>> mode_counts(["exploit", "exploit", "explore"])
        '2 exploit, 1 explore'
    """
    counts: dict[str, int] = {}
    for mode in modes:
        counts[mode] = counts.get(mode, 0) + 1
    return ", ".join(f"{n} {mode}" for mode, n in counts.items())


def cell(value: Any, width: int = ANSWER_WIDTH) -> Text:
    """Model text as a table cell: no escape sequences, no markup, at most ``width`` characters.

    Example:
        >>> cell("[red]18[/red]\\x1b[2J").plain
        '[red]18[/red]'
    """
    return Text(plain(value, width))


def iteration_table(state: dict[str, Any]) -> Table:
    """One row per finished iteration: modes, answers, vote, scores, Pass@1, bank growth."""
    table = Table(title="Iterations")
    for column in ("it", "modes", "answers", "voted", "mean score", "pass@1", "+exp", "+guide"):
        table.add_column(column)
    for record in state.get("history", []):
        answers = ", ".join(
            plain(a, ANSWER_WIDTH) if a is not None else "?" for a in record["answers"]
        )
        table.add_row(
            str(record["iteration"]),
            cell(mode_counts(record["modes"])),
            Text(answers),
            cell(record["voted_answer"]),
            _fmt(record["mean_score"]),
            _fmt(record["pass_at_1"]),
            str(record["experiences_added"]),
            str(record["guidelines_added"]),
        )
    return table


def runs_table(rows: list[tuple[RunRecord, dict[str, Any], str]]) -> Table:
    """One row per run: id, created, status, iterations done, answer, parent run (of a fork),
    problem head."""
    table = Table(title="Runs", box=box.SIMPLE)
    for column in ("id", "created", "status", "iters", "answer", "parent"):
        table.add_column(column, no_wrap=True)
    table.add_column("problem", overflow="ellipsis", no_wrap=True, max_width=PROBLEM_HEAD)
    for record, state, status in rows:
        history = state.get("history") or [{"iteration": 0}]
        done = history[-1]["iteration"]
        total = record.config.get("max_iterations", "?")
        created = time.strftime("%m-%d %H:%M", time.localtime(record.created_at))
        table.add_row(
            cell(record.run_id),
            created,
            status,
            f"{done}/{total}",
            cell(state.get("final_answer") or "-"),
            cell(record.parent_run_id or "-"),
            cell(record.problem, 500),
        )
    return table
