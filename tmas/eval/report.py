"""Result rows of an evaluation and their summary (the paper's Pass@1 per iteration and more)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from tmas.eval.data import Problem
from tmas.grading import is_correct
from tmas.nodes.selection import tally, winner


def result_row(
    problem: Problem,
    run_id: str,
    graph: str,
    state: dict[str, Any],
    wall_s: float | None,
    error: str | None = None,
) -> dict[str, Any]:
    """One JSONL row: answers per iteration, selected answer, correctness, usage, model calls
    that failed for good (``failed_calls``), time.

    Example:
        >>> row = result_row(Problem(id="p", problem="1+1?", answer="2"), "r", "tmas",
        ...     {"final_answer": "2", "stop_reason": "max_iterations",
        ...      "history": [{"answers": ["2", "3"], "pass_at_1": 0.5}]}, 1.5)
        >>> row["correct"], row["majority_answer"], row["pass_at_1"], row["failed_calls"]
        (True, '2', [0.5], 0)
    """
    history = state.get("history", [])
    last_answers = history[-1]["answers"] if history else []
    majority = winner(tally((a, 1.0) for a in last_answers))
    usage = state.get("usage", {}) or {}
    return {
        "id": problem.id,
        "run_id": run_id,
        "graph": graph,
        "gold": problem.answer,
        "status": "finished" if state.get("stop_reason") else ("failed" if error else "unfinished"),
        "error": error,
        "selected_answer": state.get("final_answer"),
        "correct": is_correct(state.get("final_answer"), problem.answer),
        "majority_answer": majority,
        "majority_correct": is_correct(majority, problem.answer),
        "answers": [record["answers"] for record in history],
        "pass_at_1": [record["pass_at_1"] for record in history],
        "usage": usage,
        "llm_calls": sum(u.get("calls", 0) for u in usage.values()),
        "failed_calls": sum(u.get("failed_calls", 0) for u in usage.values()),
        "tokens_in": sum(u.get("input_tokens", 0) for u in usage.values()),
        "tokens_out": sum(u.get("output_tokens", 0) for u in usage.values()),
        "wall_s": wall_s,
    }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracies and means over finished problems.

    Example:
        >>> row = {"status": "finished", "correct": True, "majority_correct": False,
        ...        "pass_at_1": [0.5, 1.0], "llm_calls": 10, "tokens_in": 5, "tokens_out": 5}
        >>> summarize([row])["pass_at_1_per_iteration"]
        [0.5, 1.0]
    """
    done = [r for r in rows if r["status"] == "finished"]
    iterations = max((len(r["pass_at_1"]) for r in done), default=0)
    per_iteration = []
    for i in range(iterations):
        values = [r["pass_at_1"][i] for r in done if len(r["pass_at_1"]) > i]
        per_iteration.append(_mean([v for v in values if v is not None]))
    return {
        "problems": len(rows),
        "finished": len(done),
        "failed": sum(1 for r in rows if r["status"] == "failed"),
        "accuracy": _mean([float(r["correct"]) for r in done]),
        "majority_accuracy": _mean([float(r["majority_correct"]) for r in done]),
        "pass_at_1_per_iteration": per_iteration,
        "mean_llm_calls": _mean([float(r["llm_calls"]) for r in done]),
        "mean_tokens": _mean([float(r["tokens_in"] + r["tokens_out"]) for r in done]),
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def summary_table(summary: dict[str, Any], title: str) -> Table:
    """The summary for the terminal."""
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row(
        "problems (finished / failed)",
        f"{summary['problems']} ({summary['finished']} / {summary['failed']})",
    )
    table.add_row("selected-answer accuracy", _pct(summary["accuracy"]))
    table.add_row("majority-vote accuracy (last iteration)", _pct(summary["majority_accuracy"]))
    for i, value in enumerate(summary["pass_at_1_per_iteration"], start=1):
        table.add_row(f"Pass@1, iteration {i}", _pct(value))
    calls, tokens = summary["mean_llm_calls"], summary["mean_tokens"]
    table.add_row("mean LLM calls per problem", "-" if calls is None else f"{calls:.1f}")
    table.add_row("mean tokens per problem", "-" if tokens is None else f"{tokens:,.0f}")
    return table
