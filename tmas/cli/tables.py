"""Tables of runs and iterations for the terminal."""

from __future__ import annotations

import time
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from tmas.state import failed_calls_by_role, lost_roles
from tmas.storage.run_registry import RunRecord
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


def _id_column(table: Table, name: str, ids: list[str]) -> None:
    """A column of run ids, never cut or wrapped: other columns give way."""
    table.add_column(name, no_wrap=True, min_width=max((len(i) for i in ids), default=len(name)))


def runs_table(rows: list[tuple[RunRecord, dict[str, Any], str]]) -> Table:
    """One row per run: id, created, status, iterations done, failed model calls, answer,
    parent run (of a fork), problem head. Run ids are shown whole at any terminal width;
    the answer and the problem shrink first.

    Example:
        >>> import io
        >>> from rich.console import Console
        >>> from tmas.storage.run_registry import RunRecord
        >>> record = RunRecord("eval-3f2a9c1d-gsm8k-test-117", 0.0, "x" * 90, None, "tmas",
        ...                    status="finished")
        >>> console = Console(width=80, file=io.StringIO())
        >>> console.print(runs_table([(record, {}, "interrupted")]))
        >>> text = console.file.getvalue()
        >>> "eval-3f2a9c1d-gsm8k-test-117" in text and "interrupted" in text
        True
    """
    table = Table(title="Runs", box=box.SIMPLE)
    _id_column(table, "id", [record.run_id for record, _, _ in rows])
    statuses = [status for _, _, status in rows]
    table.add_column("created", no_wrap=True, min_width=11)
    table.add_column("status", no_wrap=True, min_width=max(map(len, statuses), default=6))
    table.add_column("iters", no_wrap=True)
    table.add_column("failed", no_wrap=True)
    table.add_column("answer", overflow="ellipsis", no_wrap=True, max_width=ANSWER_WIDTH)
    parents = [record.parent_run_id for record, _, _ in rows if record.parent_run_id]
    if parents:
        _id_column(table, "parent", parents)
    table.add_column("problem", overflow="ellipsis", no_wrap=True, max_width=PROBLEM_HEAD)
    for record, state, status in rows:
        history = state.get("history") or [{"iteration": 0}]
        done = history[-1]["iteration"]
        total = ((record.plan or {}).get("config") or {}).get("max_iterations", "?")
        created = time.strftime("%m-%d %H:%M", time.localtime(record.created_at))
        failed = sum(failed_calls_by_role(state.get("usage")).values())
        cells = [
            Text(record.run_id),
            created,
            status,
            f"{done}/{total}",
            str(failed) if failed else "-",
            cell(state.get("final_answer") or "-"),
        ]
        if parents:
            cells.append(Text(record.parent_run_id or "-"))
        table.add_row(*cells, cell(record.problem, 500))
    return table


def usage_table(usage: dict[str, Any]) -> Table:
    """Model calls per role: made, failed for good, tokens in and out; a role that lost every
    call is marked.

    Example:
        >>> usage_table({"solver": {"calls": 4, "input_tokens": 9, "output_tokens": 7},
        ...              "verifier": {"calls": 0, "failed_calls": 8}}).row_count
        2
    """
    table = Table(title="Model calls")
    for column in ("role", "calls", "failed", "tokens in", "tokens out"):
        table.add_column(column, justify="left" if column == "role" else "right")
    lost = set(lost_roles(usage))
    for role, counts in usage.items():
        table.add_row(
            role + (" (every call failed)" if role in lost else ""),
            str(counts.get("calls", 0)),
            str(counts.get("failed_calls", 0)),
            f"{counts.get('input_tokens', 0):,}",
            f"{counts.get('output_tokens', 0):,}",
        )
    return table
