"""A study's two plots, drawn offline: accuracy against mean tokens per problem with 95%
interval bars (the Pareto view: up and to the left is better), and Pass@1 per iteration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PARETO, ITERATIONS = "pareto.png", "iterations.png"


def write_study_plots(report: dict[str, Any], out_dir: Path) -> list[Path]:
    """``pareto.png`` and ``iterations.png`` of a study report (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    conditions = report["conditions"]
    figure, axes = plt.subplots(figsize=(6.5, 4.5))
    for name, c in conditions.items():
        accuracy = 100 * c["accuracy"]
        low, high = (100 * v for v in c["accuracy_interval"])
        axes.errorbar(
            c["mean_tokens"] or 0.0,
            accuracy,
            yerr=[[accuracy - low], [high - accuracy]],
            fmt="o",
            capsize=4,
            label=f"{name} ({c['graph']})",
        )
    axes.set(
        xlabel="mean tokens per problem",
        ylabel="accuracy (%)",
        title=f"{report['name']}: accuracy vs tokens ({report['problems']} problems)",
    )
    axes.legend(fontsize=8)
    paths = [out_dir / PARETO]
    figure.savefig(paths[0], dpi=120, bbox_inches="tight")
    plt.close(figure)

    figure, axes = plt.subplots(figsize=(6.5, 4.5))
    for name, c in conditions.items():
        curve = [float("nan") if v is None else 100 * v for v in c["pass_at_1_per_iteration"]]
        axes.plot(range(1, len(curve) + 1), curve, marker="o", label=name)
    axes.set(xlabel="iteration", ylabel="Pass@1 (%)", title="Pass@1 per iteration")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.legend(fontsize=8)
    paths.append(out_dir / ITERATIONS)
    figure.savefig(paths[1], dpi=120, bbox_inches="tight")
    plt.close(figure)
    return paths
