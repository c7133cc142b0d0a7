"""A study's report: per condition accuracy with its interval, tokens, calls and wall per
problem; each condition's paired difference against the reference, and the study's other
contrasts (bootstrap over problems and, crossed, over seeds); how closely matched conditions met
the reference's tokens; written as ``report.json``, ``report.md`` (which ``tmas compare``
prints) and two plots."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from tmas.eval.intervals import bootstrap_mean, paired_seed_difference
from tmas.eval.results import ANSWERED, mean, per_iteration
from tmas.eval.study import Study
from tmas.eval.study_arms import arm_label, tokens_of
from tmas.eval.study_plots import write_study_plots

REPORT_MD, REPORT_JSON = "report.md", "report.json"


def condition_summary(
    by_seed: list[dict[str, dict[str, Any]]], problem_ids: list[str]
) -> dict[str, Any]:
    """One condition's figures from its rows (one mapping of problem id to row per seed):
    accuracy over every problem (a failed one counts as wrong) with its interval, and means
    per problem.

    Example:
        >>> rows = {p: {"id": p, "correct": c, "status": "finished", "tokens_in": 10,
        ...             "tokens_out": 5, "llm_calls": 2, "wall_s": 1.0, "pass_at_1": [0.5]}
        ...         for p, c in (("a", True), ("b", False))}
        >>> s = condition_summary([rows], ["a", "b"])
        >>> s["accuracy"], s["mean_tokens"], s["scores"]
        (0.5, 15.0, [[1.0], [0.0]])
    """
    scores = [[float(bool(seed[p]["correct"])) for seed in by_seed] for p in problem_ids]
    rows = [seed[p] for seed in by_seed for p in problem_ids]
    accuracy, low, high = bootstrap_mean(scores, crossed=True)
    return {
        "accuracy": accuracy,
        "accuracy_interval": [low, high],
        "scores": scores,
        "mean_tokens": mean([float(tokens_of(r)) for r in rows]),
        "mean_calls": mean([float(r["llm_calls"]) for r in rows]),
        "mean_wall_s": mean([float(r["wall_s"] or 0.0) for r in rows]),
        "failed": sum(1 for r in rows if r["status"] == "failed"),
        "pass_at_1_per_iteration": per_iteration(
            [r for r in rows if r["status"] in ANSWERED], "pass_at_1"
        ),
    }


def _settings_text(settings: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in settings.items()) or "its defaults"


def build_report(
    study: Study, design: dict[str, Any], rows: dict[str, dict[str, dict[str, Any]]]
) -> dict[str, Any]:
    """The report's figures (what ``report.json`` holds)."""
    problem_ids, seeds = design["problem_ids"], study.file.seeds
    reference = study.file.reference
    conditions: dict[str, Any] = {}
    for name, condition in study.conditions.items():
        own_seeds = study.file.seeds_of(name)
        summary = condition_summary([rows[arm_label(name, s)] for s in own_seeds], problem_ids)
        width = design["widths"].get(name)
        settings = {
            **condition.settings,
            **(condition.match_tokens.settings(width["width"]) if width else {}),
        }
        if condition.roles:
            settings["roles"] = condition.roles
        if condition.prompts:
            settings["prompts"] = condition.prompts
        if condition.plugins:
            settings["plugins"] = condition.plugins
        if condition.train is not None:
            settings["train"] = condition.train.model_dump(exclude_defaults=True)
        if own_seeds != seeds:
            settings["seeds"] = own_seeds
        conditions[name] = {
            "graph": study.topology(name).name,
            "settings": settings,
            "matched": width,
            "seeds": own_seeds,
            **summary,
        }
    ref = conditions[reference]
    for name, figures in conditions.items():
        figures["tokens_vs_reference"] = (
            figures["mean_tokens"] / ref["mean_tokens"] if ref["mean_tokens"] else None
        )
        if name != reference:
            figures["difference"] = paired_figures(ref, figures)
    return {
        "name": study.file.name,
        "description": study.file.description,
        "command": study.command,
        "reference": reference,
        "problems": len(problem_ids),
        "data": study.file.problems.data,
        "shuffle_seed": study.file.problems.shuffle_seed,
        "dedupe_against": study.dedupe_sources(),
        "deduplication": design["deduplication"],
        "seeds": seeds,
        "engine": design["engine"],
        "concurrency": design["concurrency"],
        "max_concurrency": design["max_concurrency"],
        "tolerance": study.file.tolerance,
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python "
        f"{platform.python_version()}",
        "conditions": conditions,
        "trainings": design.get("trainings", {}),
        "contrasts": [
            {"baseline": a, "treated": b, **paired_figures(conditions[a], conditions[b])}
            for a, b in study.file.contrasts
        ],
    }


def paired_figures(baseline: dict[str, Any], treated: dict[str, Any]) -> dict[str, Any]:
    """``treated - baseline`` (two conditions' figures), paired by problem on the seeds both
    ran, with its crossed bootstrap 95% interval (problems and seeds, see
    :mod:`tmas.eval.intervals`), how many pairs differ, and the difference at each seed alone.

    Example:
        >>> a = {"seeds": [0, 1], "scores": [[1.0, 0.0], [0.0, 0.0]]}
        >>> b = {"seeds": [0, 1], "scores": [[1.0, 1.0], [0.0, 1.0]]}
        >>> d = paired_figures(a, b)
        >>> d["value"], d["differ"], d["pairs"], d["seeds"], d["per_seed"]
        (0.5, 2, 4, [0, 1], [0.0, 1.0])
        >>> paired_figures(a, {"seeds": [1], "scores": [[1.0], [1.0]]})["per_seed"]
        [1.0]
    """
    seeds = [s for s in treated["seeds"] if s in baseline["seeds"]]

    def on_shared(figures: dict[str, Any]) -> list[list[float]]:
        index = [figures["seeds"].index(s) for s in seeds]
        return [[scores[i] for i in index] for scores in figures["scores"]]

    before, after = on_shared(baseline), on_shared(treated)
    diff = paired_seed_difference(before, after, crossed=True)
    pairs = [
        (x, y) for rx, ry in zip(before, after, strict=True) for x, y in zip(rx, ry, strict=True)
    ]
    return {
        "value": diff.difference,
        "interval": [diff.low, diff.high],
        "differ": sum(x != y for x, y in pairs),
        "pairs": len(pairs),
        "seeds": seeds,
        "per_seed": [
            sum(a[i] - b[i] for b, a in zip(before, after, strict=True)) / len(before)
            for i in range(len(seeds))
        ],
    }


def seed_values(contrast: dict[str, Any]) -> str:
    """A contrast's difference at each of its seeds, in points (reports written before these
    were recorded show the seeds alone).

    Example:
        >>> seed_values({"seeds": [0, 1], "per_seed": [-0.023, 0.01]})
        'seed 0: -2.3, seed 1: +1.0'
        >>> seed_values({"seeds": [0]})
        'seed 0'
    """
    values = contrast.get("per_seed")
    if values is None:
        return ", ".join(f"seed {s}" for s in contrast["seeds"])
    return ", ".join(
        f"seed {s}: {100 * v:+.1f}" for s, v in zip(contrast["seeds"], values, strict=True)
    )


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _interval(pair: list[float], sign: bool = False) -> str:
    fmt = "{:+.1f}" if sign else "{:.1f}"
    return f"[{fmt.format(100 * pair[0])}, {fmt.format(100 * pair[1])}]"


def matched_line(name: str, figures: dict[str, Any], tolerance: float) -> str:
    """What matching gave a condition, planned and realised.

    Example:
        >>> line = matched_line("sc", {"matched": {"width": 8, "modelled_tokens": 990.0,
        ...     "target_tokens": 1000.0, "mismatch": -0.01}, "tokens_vs_reference": 1.2}, 0.1)
        >>> for part in line.split("; "):
        ...     print(part)
        sc: width 8 from the pilot (modelled 990 tokens vs 1,000, -1.0%)
        realised x1.20 the reference tokens: NOT within 10%
    """
    m, ratio = figures["matched"], figures["tokens_vs_reference"]
    within = ratio is not None and abs(ratio - 1.0) <= tolerance
    verdict = f"within {tolerance:.0%}" if within else f"NOT within {tolerance:.0%}"
    return (
        f"{name}: width {m['width']} from the pilot (modelled {m['modelled_tokens']:,.0f} "
        f"tokens vs {m['target_tokens']:,.0f}, {100 * m['mismatch']:+.1f}%); realised "
        f"x{ratio:.2f} the reference tokens: {verdict}"
    )


def training_line(label: str, record: dict[str, Any]) -> str:
    """A table row of one training: its steps, seconds and, for GRPO, what it could learn from
    (:func:`tmas.training.metrics.spread_summary`).

    Example:
        >>> training_line("grpo/seed-0", {"steps": 30, "train_seconds": 600.0, "spread": {
        ...     "steps": 30, "steps_with_spread": 6, "completions_cut": 0.825}})
        '| grpo/seed-0 | 30 | 600 | 6/30 | 82% |'
        >>> training_line("sft/seed-0", {"steps": 16, "train_seconds": 88.1})
        '| sft/seed-0 | 16 | 88 | - | - |'
    """
    spread = record.get("spread") or {}
    steps = f"{spread['steps_with_spread']}/{spread['steps']}" if spread.get("steps") else "-"
    cut = spread.get("completions_cut")
    return (
        f"| {label} | {record.get('steps', '-')} | {record.get('train_seconds', 0):.0f} | "
        f"{steps} | {'-' if cut is None else f'{100 * cut:.0f}%'} |"
    )


def report_markdown(report: dict[str, Any]) -> str:
    """The report as a markdown page: the command, the design, one table, the matching."""
    dedupe = report["deduplication"]
    against = ", ".join(report["dedupe_against"]) or "no training file"
    seed = report["shuffle_seed"]
    order = "in file order" if seed is None else f"shuffled with seed {seed}"
    lines = [
        f"# Study: {report['name']}",
        "",
        *([report["description"].strip(), ""] if report["description"] else []),
        f"Command: `{report['command']}`",
        "",
        f"- Problems: {report['problems']} from `{report['data']}` ({order}); deduplicated "
        f"against {against}: {dedupe['exact']} exact, "
        f"{dedupe['normalised']} normalised and {dedupe['near']} near copies left out.",
        f"- Seeds: {report['seeds']}; reference: **{report['reference']}**.",
        f"- Engine (all conditions): {report['engine']}; problems at once: "
        f"{report['concurrency']}; model calls at once per run: "
        f"{report['max_concurrency'] or 'the topology default'}; problems interleaved across "
        f"conditions. Machine: {report['machine']}.",
        "- Accuracy counts a failed problem as wrong. Intervals: 95% percentile bootstrap "
        "over problems and, crossed, over seeds (one draw of seeds for every problem: a "
        "training seed moves all of its model's answers at once).",
        "",
        "| condition | topology | settings | accuracy % (95% CI) | vs reference, points "
        "(95% CI) | tokens/problem | x reference | calls/problem | wall s/problem | failed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, c in report["conditions"].items():
        diff = c.get("difference")
        shown = "-"
        if diff is not None:
            shown = (
                f"{100 * diff['value']:+.1f} {_interval(diff['interval'], True)}, "
                f"{diff['differ']}/{diff['pairs']} differ"
            )
        ratio = c["tokens_vs_reference"]
        lines.append(
            f"| {name} | {c['graph']} | {_settings_text(c['settings'])} | {_pct(c['accuracy'])} "
            f"{_interval(c['accuracy_interval'])} | {shown} | {c['mean_tokens'] or 0:,.0f} | "
            f"{'-' if ratio is None else f'{ratio:.2f}'} | {c['mean_calls'] or 0:.1f} | "
            f"{c['mean_wall_s'] or 0:.1f} | {c['failed']} |"
        )
    if report.get("contrasts"):
        lines += [
            "",
            "| contrast (treated - baseline) | points (95% CI) | pairs that differ | points at "
            "each seed |",
            "|---|---|---|---|",
            *(
                f"| {c['treated']} - {c['baseline']} | {100 * c['value']:+.1f} "
                f"{_interval(c['interval'], True)} | {c['differ']}/{c['pairs']} | "
                f"{seed_values(c)} |"
                for c in report["contrasts"]
            ),
        ]
    if report.get("trainings"):
        lines += [
            "",
            "| training | steps | seconds | steps with reward spread | completions cut |",
            "|---|---|---|---|---|",
            *(training_line(label, r) for label, r in report["trainings"].items()),
        ]
    matched = [
        matched_line(n, c, report["tolerance"])
        for n, c in report["conditions"].items()
        if c.get("matched")
    ]
    if matched:
        lines += ["", "Matched compute:", *(f"- {line}" for line in matched)]
    if any((c.get("difference") or {}).get("differ") == 0 for c in report["conditions"].values()):
        lines += [
            "",
            "A condition right and wrong on exactly the reference's problems has a "
            "zero-width interval: the bootstrap sees no variation at this size, which is "
            "not certainty (`--plan` gives the interval a size can expect).",
        ]
    lines += [
        "",
        "Besides the thing compared, conditions differ only in the settings shown; "
        "engine, model, problems, seeds and concurrency are shared.",
        "",
        "Plots: `pareto.png` (accuracy vs tokens, 95% interval bars), "
        "`iterations.png` (Pass@1 per iteration).",
    ]
    return "\n".join(lines) + "\n"


def write_report(
    study: Study, design: dict[str, Any], rows: dict[str, dict[str, dict[str, Any]]]
) -> dict[str, Any]:
    """Write ``report.json``, ``report.md`` and the plots into the study's folder."""
    report = build_report(study, design, rows)
    out: Path = study.out_dir
    (out / REPORT_JSON).write_text(json.dumps(report, indent=2), encoding="utf-8")
    (out / REPORT_MD).write_text(report_markdown(report), encoding="utf-8")
    report["plots"] = [str(p) for p in write_study_plots(report, out)]
    return report


def report_study(study: Study) -> dict[str, Any]:
    """Run the study (:meth:`tmas.eval.study.Study.run`) and write its report; the report,
    with the paths of its plots."""
    design, rows = study.run()
    return write_report(study, design, rows)


def read_report(folder: Path) -> str | None:
    """The markdown report of a study folder, or None when the folder holds none."""
    path = folder / REPORT_MD
    return path.read_text(encoding="utf-8") if path.exists() else None
