"""Saved evaluations as outcomes: each evaluation folder (``tmas eval --out DIR``, or a
study's ``OUT/conditions/NAME/seed-S``) is one run of a plan over problems; its identity says the
plan and the models, its results say which problems the plan solved and at what cost. Only
finished runs count, and evaluations made on other models, or with another text or gold answer
for the same problem id, are refused.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tmas.eval.identity import identity_changes
from tmas.orchrm.plans import Plan, PlanError, plan_from_identity

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


def plan_name(folder: Path) -> str:
    """The name of the plan an evaluation folder ran: the folder's name, or for an arm of a
    study (``OUT/conditions/NAME/seed-S``) its condition's.

    Example:
        >>> plan_name(Path("/runs/ev-vote3")), plan_name(Path("/study/conditions/direct/seed-2"))
        ('ev-vote3', 'direct')
    """
    folder = folder.resolve()
    if folder.name.startswith("seed-") and folder.parent.parent.name == "conditions":
        return folder.parent.name
    return folder.name


def read_artifact(folder: Path) -> Artifact:
    """The saved evaluation in ``folder``; PairsError when it is not one.

    Example:
        >>> read_artifact(Path("/no/such/eval"))
        Traceback (most recent call last):
        ...
        tmas.orchrm.outcomes.PairsError: /no/such/eval is not an evaluation folder (no \
identity.json)
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
        plan = plan_from_identity(identity, str(folder), name=plan_name(folder))
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
        tmas.orchrm.outcomes.PairsError: b was run on other models than a (backend.model: ...
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
    from tmas.lifecycle.run_database import open_runs
    from tmas.storage.sqlite import default_db_path

    storage = open_runs(db or default_db_path())
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
