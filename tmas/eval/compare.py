"""Comparing evaluations side by side: one table and two offline PNG plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.table import Table

from tmas.eval.data import DataError
from tmas.eval.evaluation import SUMMARY
from tmas.eval.results import role_counts


def load_summary(folder: Path) -> dict[str, Any]:
    """The ``summary.json`` of an evaluation folder, with the folder's name as its label."""
    path = folder / SUMMARY
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{folder} holds no readable evaluation summary ({exc})") from None
    return {"label": folder.name, **summary}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def comparison_table(summaries: list[dict[str, Any]]) -> Table:
    """One row per evaluation: topology, selection rule, problems, accuracies, final Pass@1,
    tokens, calls, failed calls (per role).

    Example:
        >>> s = {"label": "a", "graph": "tmas", "problems": 2, "finished": 2, "accuracy": 0.5,
        ...      "majority_accuracy": 0.5, "pass_at_1_per_iteration": [0.25, 0.5],
        ...      "mean_tokens": 10.0, "mean_llm_calls": 4.0}
        >>> comparison_table([s]).row_count
        1
    """
    table = Table(title="Evaluations")
    widest_label = max((len(str(s["label"])) for s in summaries), default=3)
    table.add_column("run", no_wrap=True, min_width=widest_label)
    for column in (
        "topology",
        "selection",
        "problems",
        "accuracy",
        "majority",
        "Pass@1 (last)",
        "tokens/problem",
        "calls/problem",
        "failed calls",
    ):
        table.add_column(column)
    for s in summaries:
        curve = s.get("pass_at_1_per_iteration") or []
        tokens, calls = s.get("mean_tokens"), s.get("mean_llm_calls")
        table.add_row(
            s["label"],
            str(s.get("graph")),
            ", ".join(s.get("selections") or []) or "-",
            f"{s.get('finished')}/{s.get('problems')}",
            _pct(s.get("accuracy")),
            _pct(s.get("majority_accuracy")),
            _pct(curve[-1] if curve else None),
            "-" if tokens is None else f"{tokens:,.0f}",
            "-" if calls is None else f"{calls:.1f}",
            role_counts(s.get("failed_calls_by_role") or {}),
        )
    return table


def write_plots(summaries: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """``accuracy_vs_iteration.png`` and ``accuracy_vs_tokens.png`` (matplotlib, no network)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    figure, axes = plt.subplots(figsize=(6, 4))
    for s in summaries:
        curve = [v if v is not None else float("nan") for v in s.get("pass_at_1_per_iteration", [])]
        axes.plot(range(1, len(curve) + 1), [100 * v for v in curve], marker="o", label=s["label"])
    axes.set(xlabel="iteration", ylabel="Pass@1 (%)", title="Accuracy vs iteration")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend()
    paths.append(out_dir / "accuracy_vs_iteration.png")
    figure.savefig(paths[-1], dpi=120, bbox_inches="tight")
    plt.close(figure)
    figure, axes = plt.subplots(figsize=(6, 4))
    for s in summaries:
        if s.get("mean_tokens") is not None and s.get("accuracy") is not None:
            axes.scatter(s["mean_tokens"], 100 * s["accuracy"], label=s["label"])
    axes.set(xlabel="mean tokens per problem", ylabel="accuracy (%)", title="Accuracy vs tokens")
    axes.legend()
    paths.append(out_dir / "accuracy_vs_tokens.png")
    figure.savefig(paths[-1], dpi=120, bbox_inches="tight")
    plt.close(figure)
    return paths
