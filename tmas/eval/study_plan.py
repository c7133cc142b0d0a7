"""``tmas study --plan``: the pilot, then what the planned study will cost and what it can
tell, before the spend: per condition the estimated tokens and wall, and against the reference
the expected half-width of the paired difference's 95% interval, the smallest difference it
detects with 80% power and the problems that the study's named effect would need."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from tmas.eval.power import detectable_effect, discordant_share, half_width, problems_needed
from tmas.eval.results import mean
from tmas.eval.study import PilotResult
from tmas.eval.study_arms import tokens_of

if TYPE_CHECKING:
    from tmas.eval.study import Study

PLAN_JSON = "plan.json"


def condition_estimate(
    rows: list[dict[str, Any]], tokens: float | None, runs: int
) -> dict[str, float]:
    """Estimated tokens and wall of ``runs`` problem runs from pilot ``rows``; ``tokens``
    (a matched condition's modelled tokens per problem) scales the pilot's wall per token.

    Example:
        >>> rows = [{"tokens_in": 80, "tokens_out": 20, "wall_s": 2.0}]
        >>> condition_estimate(rows, None, 10)
        {'tokens_per_problem': 100.0, 'wall_s_per_problem': 2.0, 'tokens': 1000.0, 'wall_s': 20.0}
        >>> condition_estimate(rows, 300.0, 10)["wall_s"]
        60.0
    """
    pilot_tokens = mean([float(tokens_of(r)) for r in rows]) or 0.0
    wall = mean([float(r["wall_s"] or 0.0) for r in rows]) or 0.0
    if tokens is not None and pilot_tokens:
        wall *= tokens / pilot_tokens
    per_problem = pilot_tokens if tokens is None else tokens
    return {
        "tokens_per_problem": per_problem,
        "wall_s_per_problem": wall,
        "tokens": per_problem * runs,
        "wall_s": wall * runs,
    }


def power_estimate(
    reference: list[dict[str, Any]],
    other: list[dict[str, Any]],
    problems: int,
    effect: float | None,
) -> dict[str, Any]:
    """The paired comparison's expected precision at ``problems`` problems, from the pilot's
    agreement between the two on the same problems.

    Example:
        >>> ref = [{"correct": c} for c in (True, True, False)]
        >>> other = [{"correct": c} for c in (True, False, False)]
        >>> e = power_estimate(ref, other, 100, 0.1)
        >>> e["discordant"], round(e["half_width"], 3), e["tells_effect"]
        (0.4, 0.124, False)
    """
    pairs = [
        (bool(a["correct"]), bool(b["correct"])) for a, b in zip(reference, other, strict=True)
    ]
    share = discordant_share(pairs)
    estimate: dict[str, Any] = {
        "pilot_problems": len(pairs),
        "discordant": share,
        "half_width": half_width(share, problems),
        "detectable": detectable_effect(share, problems),
    }
    if effect is not None:
        estimate["problems_for_effect"] = problems_needed(share, effect)
        estimate["tells_effect"] = estimate["detectable"] <= effect
    return estimate


def build_plan(study: Study, pilot: PilotResult) -> dict[str, Any]:
    """Estimates for the planned size (the study's problems x seeds) from the pilot."""
    problems = len(study.problems()[0])
    reference = pilot.rows[study.file.reference]
    conditions: dict[str, Any] = {}
    for name in study.conditions:
        chosen = pilot.widths.get(name)
        if chosen is None:
            rows = pilot.rows[name]
        else:  # the pilot width nearest the chosen one stands for it
            by_width = pilot.width_rows[name]
            rows_width = min(by_width, key=lambda w: abs(w - chosen.width))
            rows = by_width[rows_width]
        figures: dict[str, Any] = {
            "pilot_accuracy": mean([float(bool(r["correct"])) for r in rows]) or 0.0,
            **condition_estimate(
                rows, chosen.tokens if chosen else None, problems * len(study.file.seeds_of(name))
            ),
        }
        if chosen is not None:
            figures["matched"] = {**chosen.record(), "pilot_width": rows_width}
        if name != study.file.reference:
            figures["power"] = power_estimate(reference, rows, problems, study.file.effect)
        conditions[name] = figures
    return {
        "name": study.file.name,
        "problems": problems,
        "seeds": study.file.seeds,
        "effect": study.file.effect,
        "engine": study.backend.describe(),
        "concurrency": study.file.concurrency,
        "conditions": conditions,
        "total_wall_s": sum(c["wall_s"] for c in conditions.values()) / study.file.concurrency,
    }


def plan_lines(plan: dict[str, Any]) -> list[str]:
    """The plan as the terminal prints it.

    Example:
        >>> plan = {"name": "s", "problems": 10, "seeds": [0], "effect": 0.1, "engine": "e",
        ...     "concurrency": 1, "total_wall_s": 7200.0, "conditions": {"a": {
        ...     "pilot_accuracy": 0.5, "tokens_per_problem": 10.0, "tokens": 100.0,
        ...     "wall_s": 7200.0, "wall_s_per_problem": 720.0}}}
        >>> plan_lines(plan)[-1]
        'estimated wall in all: 2.00 hours (on this machine, from the pilot)'
    """
    lines = [
        f"study {plan['name']}: {plan['problems']} problems x {len(plan['seeds'])} seed(s) on "
        f"{plan['engine']}, {plan['concurrency']} problem(s) at once",
    ]
    for name, c in plan["conditions"].items():
        matched = c.get("matched")
        width = ""
        if matched:
            width = f", width {matched['width']} ({100 * matched['mismatch']:+.1f}% tokens)"
        lines.append(
            f"  {name}{width}: pilot accuracy {100 * c['pilot_accuracy']:.0f}%, "
            f"{c['tokens_per_problem']:,.0f} tokens and {c['wall_s_per_problem']:.1f} s per "
            f"problem -> {c['tokens']:,.0f} tokens, {c['wall_s'] / 3600:.2f} h"
        )
        power = c.get("power")
        if power:
            line = (
                f"    vs reference: expected 95% interval +/-{100 * power['half_width']:.1f} "
                f"points; detects {100 * power['detectable']:.1f} points with 80% power "
                f"(pilot disagreement {power['discordant']:.2f}, smoothed"
                + (f"; from the pilot at width {matched['pilot_width']})" if matched else ")")
            )
            lines.append(line)
            if "tells_effect" in power and not power["tells_effect"]:
                lines.append(
                    f"    TOO SMALL to tell {100 * plan['effect']:.0f} points: that needs about "
                    f"{power['problems_for_effect']} problems"
                )
    lines.append(
        f"estimated wall in all: {plan['total_wall_s'] / 3600:.2f} hours (on this "
        "machine, from the pilot)"
    )
    return lines


def plan_study(study: Study) -> dict[str, Any]:
    """Run the pilot and write ``plan.json``; the plan (:func:`build_plan`)."""
    plan = build_plan(study, study.pilot())
    (study.out_dir / PLAN_JSON).write_text(json.dumps(plan, indent=2), encoding="utf-8")
    return plan
