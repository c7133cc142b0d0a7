"""The arms of a study: one condition at one seed (or at a pilot width), each an evaluation,
and the order in which a study solves their problems (interleaved, the order of the arms
turning with each problem, so a slow spell of a shared machine hits all alike)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tmas.eval.evaluation import Evaluation
from tmas.eval.job import ProblemJob


@dataclass(frozen=True)
class Arm:
    """One condition at one seed (or at a pilot width): its label and evaluation."""

    label: str
    condition: str
    seed: int
    evaluation: Evaluation
    width: int | None = None


def arm_label(condition: str, seed: int) -> str:
    """The label of a condition's arm at a seed, as progress lines and the report name it.

    Example:
        >>> arm_label("tmas", 0)
        'tmas/seed-0'
    """
    return f"{condition}/seed-{seed}"


def interleaved(arms: list[Arm], jobs: dict[str, list[ProblemJob]]) -> list[tuple[Arm, ProblemJob]]:
    """Every arm's jobs, problem by problem, the order of the arms turning with each problem.

    Example:
        >>> arms = [Arm("a", "a", 0, None), Arm("b", "b", 0, None)]
        >>> [(arm.label, job) for arm, job in interleaved(arms, {"a": [1, 2], "b": [1, 2]})]
        [('a', 1), ('b', 1), ('b', 2), ('a', 2)]
    """
    order = []
    for index in range(max((len(j) for j in jobs.values()), default=0)):
        turn = index % max(len(arms), 1)
        for arm in arms[turn:] + arms[:turn]:
            if index < len(jobs[arm.label]):
                order.append((arm, jobs[arm.label][index]))
    return order


def tokens_of(row: dict[str, Any]) -> int:
    """A row's tokens, prompt and answer.

    Example:
        >>> tokens_of({"tokens_in": 3, "tokens_out": 4})
        7
    """
    return int(row["tokens_in"]) + int(row["tokens_out"])
