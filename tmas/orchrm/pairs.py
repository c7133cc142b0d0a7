"""Win/lose pairs of plans from saved evaluations, in OrchRM's pair format.

Each evaluation folder (``tmas eval --out DIR``) is one plan run over problems: its saved
identity says the plan (topology spec and settings) and the models, its results say which
problems the plan solved and at what cost. Several folders of one plan (run at other seeds)
are several runs of it: a plan's record on a problem is its success rate over its runs. For
each problem, a plan beats another when its success rate is higher by at least a margin
(``correct-over-incorrect``; with one run each, right beats wrong); optionally, the clearly
cheaper of two plans beats the other when it is right at least half the time and its success
rate is at most ``cost_tolerance`` below the costlier one's (``cheaper-over-costlier``; with
the tolerance 0, only when it is right at least as often: a cost-aware rule lets a cheaper plan
a little less reliable win, so labels can say "easy problem: the cheap plan is enough").
Problems are split into training and held-out ones before any pair is made, so no problem is
on both sides. Pairs are only built across evaluations made on the same models, of the same
problems (same text and gold).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tmas.orchrm.outcomes import (
    Outcome,
    PairsError,
    check_same_models,
    collect_outcomes,
    read_artifact,
)
from tmas.orchrm.plans import Plan

CORRECT_OVER_INCORRECT = "correct-over-incorrect"
CHEAPER_OVER_COSTLIER = "cheaper-over-costlier"
PAIR_FIELDS = ("input", "chosen", "rejected")


@dataclass(frozen=True)
class PlanRecord:
    """One plan's runs on one problem: how many, how many were right, mean tokens."""

    problem_id: str
    problem: str
    plan: Plan
    runs: int
    successes: int
    tokens: float

    @property
    def rate(self) -> float:
        """The share of the runs that were right."""
        return self.successes / self.runs


def plan_records(outcomes: list[Outcome]) -> list[PlanRecord]:
    """A problem's outcomes gathered per plan (by digest), in first-seen order.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.orchrm.plans import make_plan
        >>> plan = make_plan("mv", load_bundled("majority_vote"))
        >>> runs = [Outcome("p", "1+1?", "2", plan, ok, 10, "a") for ok in (True, False, True)]
        >>> record = plan_records(runs)[0]
        >>> record.runs, record.successes, round(record.rate, 2)
        (3, 2, 0.67)
    """
    grouped: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.plan.digest, []).append(outcome)
    return [
        PlanRecord(runs[0].problem_id, runs[0].problem, runs[0].plan, len(runs),
                   sum(o.correct for o in runs), sum(o.tokens for o in runs) / len(runs))
        for runs in grouped.values()
    ]  # fmt: skip


def pair_row(winner: PlanRecord, loser: PlanRecord, source: str) -> dict[str, Any]:
    """One pair in OrchRM's format (``input, chosen, rejected, source``) with its provenance:
    each side's runs, successes and mean tokens."""
    row: dict[str, Any] = {
        "input": winner.problem,
        "chosen": winner.plan.text,
        "rejected": loser.plan.text,
        "source": source,
        "problem_id": winner.problem_id,
    }
    for side, record in (("chosen", winner), ("rejected", loser)):
        row.update({f"{side}_plan": record.plan.name, f"{side}_digest": record.plan.digest,
                    f"{side}_runs": record.runs, f"{side}_successes": record.successes,
                    f"{side}_tokens": round(record.tokens, 1)})  # fmt: skip
    return row


def close_enough(cheap: PlanRecord, costly: PlanRecord, tolerance: float) -> bool:
    """Whether ``cheap`` was right at least half the time and its success rate is at most
    ``tolerance`` below ``costly``'s (compared exactly, whatever their run counts).

    Example:
        >>> def record(successes, runs):
        ...     return PlanRecord("p", "q", None, runs, successes, 10.0)
        >>> cheap, costly = record(2, 3), record(3, 3)
        >>> close_enough(cheap, costly, 0.0), close_enough(cheap, costly, 0.34)
        (False, True)
    """
    slack = tolerance * cheap.runs * costly.runs + 1e-9
    below = costly.successes * cheap.runs - cheap.successes * costly.runs
    return 2 * cheap.successes >= cheap.runs and below <= slack


def problem_pairs(
    outcomes: list[Outcome],
    cheaper: bool = False,
    margin: float = 0.1,
    success_margin: float = 0.5,
    cost_tolerance: float = 0.0,
) -> list[dict[str, Any]]:
    """The pairs of one problem: a plan over another whose success rate is lower by at least
    ``success_margin``; with ``cheaper``, a plan using at least ``margin`` fewer tokens over one
    it is :func:`close_enough` to (``cost_tolerance``: how much less often it may be right)."""
    if cost_tolerance >= success_margin:
        raise PairsError(
            f"cost_tolerance {cost_tolerance} must be below success_margin {success_margin}: "
            "else one pair of plans could win both ways"
        )
    records = plan_records(outcomes)
    pairs = []
    for winner in records:
        for loser in records:
            if winner is loser:
                continue
            gap = winner.rate - loser.rate
            if gap >= success_margin - 1e-9:
                pairs.append(pair_row(winner, loser, CORRECT_OVER_INCORRECT))
            elif cheaper and gap > -success_margin and close_enough(winner, loser, cost_tolerance):
                if winner.tokens <= loser.tokens * (1 - margin):
                    pairs.append(pair_row(winner, loser, CHEAPER_OVER_COSTLIER))
    return pairs


def held_out_problems(problems: list[str], fraction: float, seed: int) -> set[str]:
    """A seeded share of the problems (by text), held out before pairs are made.

    Example:
        >>> held = held_out_problems([f"p{i}" for i in range(10)], 0.3, seed=0)
        >>> len(held), held <= {f"p{i}" for i in range(10)}
        (3, True)
    """
    if fraction <= 0 or len(problems) < 2:
        return set()
    ranked = sorted(set(problems), key=lambda p: hashlib.sha256(f"{seed}:{p}".encode()).hexdigest())
    return set(ranked[: max(1, math.floor(len(ranked) * fraction))])


@dataclass
class PairSet:
    """Pairs of the training problems, pairs of the held-out ones, and a report."""

    train: list[dict[str, Any]]
    held_out: list[dict[str, Any]]
    report: dict[str, Any]


def build_pairs(
    folders: list[Path],
    cheaper: bool = False,
    margin: float = 0.1,
    db: str | Path | None = None,
    *,
    success_margin: float = 0.5,
    cost_tolerance: float = 0.0,
    held_out: float = 0.0,
    seed: int = 0,
) -> PairSet:
    """Pairs from saved evaluations (several folders of one plan are several runs of it),
    the problems split first into training and held-out ones (``held_out``, a share, by
    ``seed``), and a report: plans, runs per plan and problem, problems per side, pairs by
    source, skipped rows. PairsError for a folder that is not a finished evaluation,
    evaluations made on other models, or the same problem id with another text.

    Example::

        pairs = build_pairs([Path("eval-mv-s1"), Path("eval-mv-s2"), Path("eval-tmas-s1"),
                             Path("eval-tmas-s2")], held_out=0.25)
        pairs.train, pairs.held_out, pairs.report
    """
    if len(folders) < 2:
        raise PairsError("pairs compare plans: give at least two evaluation folders")
    artifacts = [read_artifact(folder) for folder in folders]
    check_same_models(artifacts)
    plans = {a.plan.digest: a.plan.name for a in artifacts}
    if len(plans) < 2:
        raise PairsError("pairs compare plans: these evaluations are all of one plan")
    outcomes, skipped = collect_outcomes(artifacts, db)
    held = held_out_problems([outcomes[p][0].problem for p in outcomes], held_out, seed)
    sides: dict[str, list[dict[str, Any]]] = {"train": [], "held_out": []}
    for problem_id in sorted(outcomes):
        side = "held_out" if outcomes[problem_id][0].problem in held else "train"
        sides[side] += problem_pairs(
            outcomes[problem_id], cheaper, margin, success_margin, cost_tolerance
        )
    runs = Counter(r.runs for problem in outcomes.values() for r in plan_records(problem))
    report = {
        "evaluations": len(artifacts),
        "plans": len(plans),
        "runs_per_plan_and_problem": {str(k): v for k, v in sorted(runs.items())},
        "problems": len(outcomes),
        "held_out_problems": len(held),
        "problems_with_pairs": len({p["problem_id"] for p in sides["train"] + sides["held_out"]}),
        "success_margin": success_margin,
        "cost_tolerance": cost_tolerance if cheaper else None,
        "pairs": dict(Counter(p["source"] for p in sides["train"])),
        "held_out_pairs": dict(Counter(p["source"] for p in sides["held_out"])),
        "skipped_rows": dict(skipped),
    }
    return PairSet(sides["train"], sides["held_out"], report)


def read_pairs(path: Path) -> list[dict[str, Any]]:
    """The pairs of a JSONL file; PairsError naming the first line without ``input``,
    ``chosen`` or ``rejected`` text.

    Example:
        >>> import tempfile
        >>> bad = Path(tempfile.mkdtemp()) / "pairs.jsonl"
        >>> _ = bad.write_text('{"input": "1+1?", "chosen": "topology: a"}\\n')
        >>> read_pairs(bad)
        Traceback (most recent call last):
        ...
        tmas.orchrm.outcomes.PairsError: ...pairs.jsonl line 1: no rejected (each pair needs ...
    """
    if not path.is_file():
        raise PairsError(f"no pairs file {path}")
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PairsError(f"{path} line {number}: not JSON ({exc})") from None
        missing = [f for f in PAIR_FIELDS if not isinstance(row, dict) or not row.get(f)]
        if missing:
            raise PairsError(
                f"{path} line {number}: no {', '.join(missing)} (each pair needs "
                f"{', '.join(PAIR_FIELDS)} as text)"
            )
        if not all(isinstance(row[f], str) for f in PAIR_FIELDS):
            raise PairsError(f"{path} line {number}: {', '.join(PAIR_FIELDS)} must be text")
        pairs.append(row)
    if not pairs:
        raise PairsError(f"{path} holds no pairs")
    return pairs
