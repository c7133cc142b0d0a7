"""Training metrics: one JSON line per logged step, and a picture of the rewards over steps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tmas.training.data_files import replace_atomically

REWARD_PREFIXES = ("reward", "rewards/")


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The metric lines of ``path`` (none when it does not exist).

    Example:
        >>> read_metrics(Path("/no/such/metrics.jsonl"))
        []
    """
    if not path.is_file():
        return []
    found = []
    for line in path.read_text().splitlines():
        try:
            found.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut short by a kill
    return found


def keep_steps_up_to(path: Path, step: int) -> None:
    """Drop the lines of steps after ``step`` (written after the checkpoint a resumed run
    continues from), so that no step is counted twice.

    Example:
        >>> import tempfile
        >>> log = Path(tempfile.mkdtemp()) / "m.jsonl"
        >>> _ = log.write_text('{"step": 1}\\n{"step": 2}\\n')
        >>> keep_steps_up_to(log, 1); read_metrics(log)
        [{'step': 1}]
    """
    kept = [line for line in read_metrics(path) if line.get("step", 0) <= step]
    if path.is_file():
        text = "".join(json.dumps(line) + "\n" for line in kept)
        replace_atomically(path, lambda temporary: temporary.write_text(text))


def append_metrics(path: Path, step: int, logs: dict[str, Any]) -> None:
    """Add one line: the step and the numeric values of ``logs``.

    Example:
        >>> import tempfile
        >>> log = Path(tempfile.mkdtemp()) / "m.jsonl"
        >>> append_metrics(log, 3, {"loss": 0.5, "note": "x"}); read_metrics(log)
        [{'step': 3, 'loss': 0.5}]
    """
    line = {"step": step}
    line.update({k: v for k, v in logs.items() if isinstance(v, int | float)})
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def spread_summary(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """What a GRPO training could learn from, from its metric lines: the steps logged, those in
    which some group's rewards differed (a step without spread has no gradient), the share of
    completions cut at the budget (TRL masks them) and the mean reward.

    Example:
        >>> spread_summary([
        ...     {"step": 1, "frac_reward_zero_std": 1.0, "completions/clipped_ratio": 0.5,
        ...      "reward": 0.0},
        ...     {"step": 2, "frac_reward_zero_std": 0.0, "completions/clipped_ratio": 0.25,
        ...      "reward": 0.5},
        ...     {"step": 2, "train_runtime": 9.0}])
        {'steps': 2, 'steps_with_spread': 1, 'completions_cut': 0.375, 'mean_reward': 0.25}
    """
    steps = [line for line in metrics if "frac_reward_zero_std" in line]
    if not steps:
        return {"steps": 0, "steps_with_spread": 0, "completions_cut": None, "mean_reward": None}
    cut = [line.get("completions/clipped_ratio", 0.0) for line in steps]
    return {
        "steps": len(steps),
        "steps_with_spread": sum(line["frac_reward_zero_std"] < 1 for line in steps),
        "completions_cut": round(sum(cut) / len(cut), 4),
        "mean_reward": round(sum(line.get("reward", 0.0) for line in steps) / len(steps), 4),
    }


def plot_rewards(metrics: list[dict[str, Any]], path: Path) -> bool:
    """Draw every reward series (the total, each component, each ``_source``) over steps into a
    PNG at ``path``; False when there is nothing to draw.

    Example:
        >>> import tempfile
        >>> plot_rewards([{"step": 1, "reward": 0.5}, {"step": 2, "reward": 1.0}],
        ...              Path(tempfile.mkdtemp()) / "r.png")
        True
    """
    names = sorted(
        {k for line in metrics for k in line if k.startswith(REWARD_PREFIXES) and "std" not in k}
    )
    if not names:
        return False
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(figsize=(9, 5))
    for name in names:
        points = [(line["step"], line[name]) for line in metrics if name in line]
        axes.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=name)
    axes.set_xlabel("step")
    axes.set_ylabel("mean reward")
    axes.legend(fontsize=7, loc="best")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True
