"""Result rows of an evaluation and their summary (the paper's Pass@1 per iteration and more)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from tmas.answers.grading import is_correct
from tmas.eval.data import Problem
from tmas.lifecycle.run_status import finished_status
from tmas.nodes.control.voting import tally, winner
from tmas.state import failed_calls_by_role, lost_roles


def result_row(
    problem: Problem,
    run_id: str,
    graph: str,
    state: dict[str, Any],
    wall_s: float | None,
    error: str | None = None,
    *,
    fatal: bool = False,
) -> dict[str, Any]:
    """One JSONL row: answers per iteration, the selected answer and the rule that selected it,
    correctness, Pass@1 per iteration (a failed solver call counts as wrong; the
    ``pass_at_1_answered`` figure leaves failed calls out), usage, model calls that failed for
    good (``failed_calls``), time.

    Example:
        >>> row = result_row(Problem(id="p", problem="1+1?", answer="2"), "r", "tmas",
        ...     {"final_answer": "2", "stop_reason": "max_iterations",
        ...      "history": [{"answers": ["2", "3"], "pass_at_1": 0.5}]}, 1.5)
        >>> row["correct"], row["majority_answer"], row["pass_at_1"], row["failed_calls"]
        (True, '2', [0.5], 0)
    """
    grade = (state.get("extras") or {}).get("proof_grade")
    if grade is not None:  # a proof run: its judge's grades, not answers, say what is right
        return {**_answer_row(problem, run_id, graph, state, wall_s, error, fatal),
                "correct": bool(grade["correct"]), "pass_at_1": [grade["pass_at_1"]],
                "pass_at_1_answered": [grade.get("pass_at_1_judged", grade["pass_at_1"])],
                "judge_failures": grade.get("judge_failures", 0), "proof_grade": grade}  # fmt: skip
    return _answer_row(problem, run_id, graph, state, wall_s, error, fatal)


def _answer_row(
    problem: Problem,
    run_id: str,
    graph: str,
    state: dict[str, Any],
    wall_s: float | None,
    error: str | None,
    fatal: bool,
) -> dict[str, Any]:
    history = state.get("history", [])
    last_answers = history[-1]["answers"] if history else []
    majority = winner(tally((a, 1.0) for a in last_answers))
    usage = state.get("usage", {}) or {}
    failed_by_role = failed_calls_by_role(usage)
    return {
        "id": problem.id,
        "problem": problem.problem,
        "run_id": run_id,
        "graph": graph,
        "gold": problem.answer,
        "status": row_status(state, error),
        "error": error,
        "fatal": fatal,
        "lost_roles": lost_roles(usage),
        "selected_answer": state.get("final_answer"),
        "selection": state.get("selection"),
        "correct": is_correct(state.get("final_answer"), problem.answer),
        "majority_answer": majority,
        "majority_correct": is_correct(majority, problem.answer),
        "answers": [record["answers"] for record in history],
        "pass_at_1": [record["pass_at_1"] for record in history],
        "pass_at_1_answered": [
            record.get("pass_at_1_answered", record["pass_at_1"]) for record in history
        ],
        "usage": usage,
        "llm_calls": sum(u.get("calls", 0) for u in usage.values()),
        "failed_calls": sum(failed_by_role.values()),
        "failed_calls_by_role": failed_by_role,
        "tokens_in": sum(u.get("input_tokens", 0) for u in usage.values()),
        "tokens_out": sum(u.get("output_tokens", 0) for u in usage.values()),
        "wall_s": wall_s,
    }


def row_status(state: dict[str, Any], error: str | None = None) -> str:
    """finished, degraded (finished, but some role lost every call), failed or unfinished.

    Example:
        >>> row_status({"stop_reason": "max_iterations", "usage": {"verifier": {"calls": 0,
        ...     "failed_calls": 2}}}), row_status({}, "boom"), row_status({})
        ('degraded', 'failed', 'unfinished')
    """
    return finished_status(state) or ("failed" if error else "unfinished")


ANSWERED = ("finished", "degraded")


def mean(values: list[float]) -> float | None:
    """The mean, None for no values.

    Example:
        >>> mean([1.0, 2.0]), mean([])
        (1.5, None)
    """
    return sum(values) / len(values) if values else None


def per_iteration(rows: list[dict[str, Any]], key: str) -> list[float | None]:
    """The mean of each iteration's ``key`` figure over ``rows`` (rows without it skipped)."""
    iterations = max((len(r.get(key) or []) for r in rows), default=0)
    means = []
    for i in range(iterations):
        values = [(r.get(key) or [])[i] for r in rows if len(r.get(key) or []) > i]
        means.append(mean([v for v in values if v is not None]))
    return means


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracies and means over the problems that finished (degraded ones included: they
    gave an answer), failed model calls per role over every problem.

    Example:
        >>> row = {"status": "finished", "correct": True, "majority_correct": False,
        ...        "pass_at_1": [0.5, 1.0], "llm_calls": 10, "tokens_in": 5, "tokens_out": 5}
        >>> summarize([row])["pass_at_1_per_iteration"]
        [0.5, 1.0]
    """
    done = [r for r in rows if r["status"] in ANSWERED]
    failed_by_role: dict[str, int] = {}
    for row in rows:
        for role, count in (row.get("failed_calls_by_role") or {}).items():
            failed_by_role[role] = failed_by_role.get(role, 0) + count
    return {
        "problems": len(rows),
        "finished": len(done),
        "degraded": sum(1 for r in rows if r["status"] == "degraded"),
        "failed": sum(1 for r in rows if r["status"] == "failed"),
        "accuracy": mean([float(r["correct"]) for r in done]),
        "majority_accuracy": mean([float(r["majority_correct"]) for r in done]),
        "pass_at_1_per_iteration": per_iteration(done, "pass_at_1"),
        "pass_at_1_answered_per_iteration": per_iteration(done, "pass_at_1_answered"),
        "selections": sorted({r["selection"] for r in done if r.get("selection")}),
        "failed_calls_by_role": failed_by_role,
        "judge_failures": sum(r.get("judge_failures", 0) for r in rows),
        "mean_llm_calls": mean([float(r["llm_calls"]) for r in done]),
        "mean_tokens": mean([float(r["tokens_in"] + r["tokens_out"]) for r in done]),
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def role_counts(counts: dict[str, int]) -> str:
    """Counts per role for a table cell ("-" for none).

    Example:
        >>> role_counts({"verifier": 8, "summary": 1}), role_counts({})
        ('9: verifier 8, summary 1', '-')
    """
    if not counts:
        return "-"
    return f"{sum(counts.values())}: " + ", ".join(f"{role} {n}" for role, n in counts.items())


def summary_table(summary: dict[str, Any], title: str) -> Table:
    """The summary for the terminal."""
    table = Table(title=title)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row(
        "problems (finished / degraded / failed)",
        f"{summary['problems']} ({summary['finished']} / {summary.get('degraded', 0)} / "
        f"{summary['failed']})",
    )
    selections = ", ".join(summary.get("selections") or []) or "-"
    table.add_row(f"selected-answer accuracy ({selections})", _pct(summary["accuracy"]))
    table.add_row("majority-vote accuracy (last iteration)", _pct(summary["majority_accuracy"]))
    answered = summary.get("pass_at_1_answered_per_iteration") or []
    for i, value in enumerate(summary["pass_at_1_per_iteration"], start=1):
        extra = answered[i - 1] if i <= len(answered) else None
        shown = _pct(value)
        if extra is not None and extra != value:
            shown += f" ({_pct(extra)} leaving failed calls out)"
        table.add_row(f"Pass@1, iteration {i}", shown)
    calls, tokens = summary["mean_llm_calls"], summary["mean_tokens"]
    table.add_row("mean LLM calls per problem", "-" if calls is None else f"{calls:.1f}")
    table.add_row("mean tokens per problem", "-" if tokens is None else f"{tokens:,.0f}")
    table.add_row("failed model calls", role_counts(summary.get("failed_calls_by_role") or {}))
    if summary.get("judge_failures"):
        table.add_row("proofs left ungraded (judge failed)", str(summary["judge_failures"]))
    return table
