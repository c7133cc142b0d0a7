"""Win/lose pairs of plans from saved evaluations, in OrchRM's pair format.

Each evaluation folder (``tmas eval --out DIR``) is one plan run over problems: its saved
identity says the plan (topology spec and settings) and the models, its results say which
problems the plan solved and at what cost. For each problem, a plan whose run was right beats
a plan whose run was wrong (``correct-over-incorrect``); optionally, of two right plans, the
clearly cheaper one beats the other (``cheaper-over-costlier``). Pairs are only built across
evaluations made on the same models, of the same problems (same text and gold).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tmas.eval.identity import identity_changes
from tmas.orchrm.plans import Plan, PlanError, plan_from_identity

CORRECT_OVER_INCORRECT = "correct-over-incorrect"
CHEAPER_OVER_COSTLIER = "cheaper-over-costlier"
PAIR_FIELDS = ("input", "chosen", "rejected")
MODEL_KEYS = ("backend", "models")


class PairsError(ValueError):
    """Evaluations that cannot be paired, or a pairs file that lacks what training needs."""


@dataclass(frozen=True)
class Outcome:
    """One plan's run on one problem."""

    problem_id: str
    problem: str
    gold: str
    plan: Plan
    correct: bool
    tokens: int
    source: str


@dataclass
class Artifact:
    """One saved evaluation: its folder, identity, plan (named after the folder) and rows."""

    folder: Path
    identity: dict[str, Any]
    plan: Plan
    rows: list[dict[str, Any]]


def _read_json_lines(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a kill
        if isinstance(row, dict):
            rows.append(row)
    return rows


def read_artifact(folder: Path) -> Artifact:
    """The saved evaluation in ``folder``; PairsError when it is not one.

    Example:
        >>> read_artifact(Path("/no/such/eval"))
        Traceback (most recent call last):
        ...
        tmas.orchrm.pairs.PairsError: /no/such/eval is not an evaluation folder (no identity.json)
    """
    identity_path, results_path = folder / "identity.json", folder / "results.jsonl"
    if not identity_path.is_file():
        raise PairsError(f"{folder} is not an evaluation folder (no identity.json)")
    try:
        identity = json.loads(identity_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise PairsError(f"{identity_path} is damaged ({exc})") from None
    if identity.get("stopped"):
        raise PairsError(f"{folder}: the evaluation stopped ({identity['stopped']}); finish it")
    try:
        plan = plan_from_identity(identity, str(folder), name=folder.resolve().name)
    except PlanError as exc:
        raise PairsError(str(exc)) from None
    rows = _read_json_lines(results_path) if results_path.is_file() else []
    if not rows:
        raise PairsError(f"{folder} holds no results (run its tmas eval command to the end)")
    return Artifact(folder=folder, identity=identity, plan=plan, rows=rows)


def check_same_models(artifacts: list[Artifact]) -> None:
    """Refuse evaluations made on other models than the first one's, naming what differs.

    Example:
        >>> from tmas.orchrm.plans import make_plan
        >>> from tmas.graphs.bundled import load_bundled
        >>> plan = make_plan("mv", load_bundled("majority_vote"))
        >>> a = Artifact(Path("a"), {"backend": {"model": "qwen"}}, plan, [])
        >>> b = Artifact(Path("b"), {"backend": {"model": "smollm2"}}, plan, [])
        >>> check_same_models([a, b])
        Traceback (most recent call last):
        ...
        tmas.orchrm.pairs.PairsError: b was run on other models than a (backend.model: ...
    """
    first = artifacts[0]
    reference = {k: first.identity.get(k) for k in MODEL_KEYS}
    for other in artifacts[1:]:
        changes = identity_changes(reference, {k: other.identity.get(k) for k in MODEL_KEYS})
        if changes:
            raise PairsError(
                f"{other.folder} was run on other models than {first.folder} "
                f"({'; '.join(changes[:4])}); pairs compare plans on the same models"
            )


def problem_text(row: dict[str, Any], folder: Path, db: str | Path | None) -> str:
    """A result row's problem text: saved in the row, or (older rows) in the run database."""
    if isinstance(row.get("problem"), str):
        return row["problem"]
    from tmas.storage import open_storage
    from tmas.storage.sqlite import default_db_path

    storage = open_storage(db or default_db_path())
    try:
        return storage.registry.get(row["run_id"]).problem
    except Exception as exc:  # noqa: BLE001 - any lookup failure is one clear message
        raise PairsError(
            f"{folder}: row {row.get('id')!r} has no problem text and its run cannot be read "
            f"({exc}); pass the run database with --db"
        ) from None
    finally:
        storage.close()


def collect_outcomes(
    artifacts: list[Artifact], db: str | Path | None = None
) -> tuple[dict[str, list[Outcome]], Counter]:
    """Each problem's outcomes across the evaluations, and the rows skipped by status (only
    finished runs count: a failed, unfinished or degraded run says nothing about its plan)."""
    outcomes: dict[str, list[Outcome]] = defaultdict(list)
    skipped: Counter = Counter()
    texts: dict[str, tuple[str, str, Path]] = {}
    for artifact in artifacts:
        for row in artifact.rows:
            if row.get("status") != "finished":
                skipped[str(row.get("status"))] += 1
                continue
            problem_id, gold = str(row["id"]), str(row.get("gold"))
            text = problem_text(row, artifact.folder, db)
            known = texts.setdefault(problem_id, (text, gold, artifact.folder))
            if known[:2] != (text, gold):
                what = "text" if known[0] != text else "gold answer"
                raise PairsError(
                    f"problem {problem_id!r} has another {what} in {artifact.folder} than in "
                    f"{known[2]}; pairs are built over the same problems"
                )
            outcomes[problem_id].append(
                Outcome(
                    problem_id=problem_id,
                    problem=text,
                    gold=gold,
                    plan=artifact.plan,
                    correct=bool(row.get("correct")),
                    tokens=int(row.get("tokens_in", 0)) + int(row.get("tokens_out", 0)),
                    source=str(artifact.folder),
                )
            )
    return outcomes, skipped


def pair_row(winner: Outcome, loser: Outcome, source: str) -> dict[str, Any]:
    """One pair in OrchRM's format (``input, chosen, rejected, source``) with its provenance."""
    return {
        "input": winner.problem,
        "chosen": winner.plan.text,
        "rejected": loser.plan.text,
        "source": source,
        "problem_id": winner.problem_id,
        "chosen_plan": winner.plan.name,
        "rejected_plan": loser.plan.name,
        "chosen_digest": winner.plan.digest,
        "rejected_digest": loser.plan.digest,
        "chosen_tokens": winner.tokens,
        "rejected_tokens": loser.tokens,
    }


def problem_pairs(
    outcomes: list[Outcome], cheaper: bool = False, margin: float = 0.1
) -> list[dict[str, Any]]:
    """The pairs of one problem: right over wrong plans, and (``cheaper``) of two right plans
    the one using at least ``margin`` fewer tokens over the other."""
    pairs = []
    for winner in outcomes:
        for loser in outcomes:
            if winner.plan.digest == loser.plan.digest or not winner.correct:
                continue
            if not loser.correct:
                pairs.append(pair_row(winner, loser, CORRECT_OVER_INCORRECT))
            elif cheaper and winner.tokens <= loser.tokens * (1 - margin):
                pairs.append(pair_row(winner, loser, CHEAPER_OVER_COSTLIER))
    return pairs


def build_pairs(
    folders: list[Path],
    cheaper: bool = False,
    margin: float = 0.1,
    db: str | Path | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Pairs from saved evaluations, and a report (plans, problems, pairs by source, skipped
    rows). PairsError for a folder that is not a finished evaluation, evaluations made on
    other models, or the same problem id with another text.

    Example::

        pairs, report = build_pairs([Path("eval-mv"), Path("eval-tmas")])
    """
    if len(folders) < 2:
        raise PairsError("pairs compare plans: give at least two evaluation folders")
    artifacts = [read_artifact(folder) for folder in folders]
    check_same_models(artifacts)
    outcomes, skipped = collect_outcomes(artifacts, db)
    pairs = [
        pair
        for problem_id in sorted(outcomes)
        for pair in problem_pairs(outcomes[problem_id], cheaper, margin)
    ]
    plans = {a.plan.digest: a.plan.name for a in artifacts}
    report = {
        "evaluations": len(artifacts),
        "plans": len(plans),
        "problems": len(outcomes),
        "problems_with_pairs": len({p["problem_id"] for p in pairs}),
        "pairs": dict(Counter(p["source"] for p in pairs)),
        "skipped_rows": dict(skipped),
    }
    return pairs, report


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
        tmas.orchrm.pairs.PairsError: ...pairs.jsonl line 1: no rejected (each pair needs ...
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
