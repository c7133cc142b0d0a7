"""Choosing the plan before paying for it (``--graph auto``): take K plans (from a plan space,
or written by an orchestrator), score each with the plan reward model before anything runs,
and hand back the best with every candidate's score for the run to record.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tmas.orchrm.orchestrator import Orchestrator
from tmas.orchrm.plan_space import PlanSpace
from tmas.orchrm.plans import Plan, PlanError
from tmas.orchrm.reward_model import (
    PlanRewardModel,
    check_plan_space,
    load_reward_model,
    read_record,
)


@dataclass(frozen=True)
class Candidate:
    """One candidate plan: its name, identity, text, where it came from, and its score (or
    why it was rejected before scoring)."""

    name: str
    digest: str | None
    text: str
    source: str
    score: float | None = None
    rejected: str | None = None


@dataclass(frozen=True)
class PlanChoice:
    """The plan chosen for a problem and every candidate considered."""

    chosen: Plan
    candidates: tuple[Candidate, ...]
    reward_model: str
    tied: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        """What a run saves: the chosen plan's name and digest, every candidate, the model.

        Example::

            run_record["topology"]["plan_choice"] = choice.record()
        """
        return {
            "chosen": self.chosen.name,
            "chosen_digest": self.chosen.digest,
            "reward_model": self.reward_model,
            "candidates": [asdict(c) for c in self.candidates],
            "tied": list(self.tied),
        }


def sample_plans(plans: tuple[Plan, ...], k: int, problem: str, seed: int) -> list[Plan]:
    """``k`` plans of the space (all when it holds no more), the same ones for the same
    problem and seed, in the space's order.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.orchrm.plans import make_plan
        >>> plans = tuple(make_plan(f"mv{n}", load_bundled("majority_vote"),
        ...               {"n_candidates": n}) for n in (1, 2, 3))
        >>> [p.name for p in sample_plans(plans, 5, "1+1?", 0)]
        ['mv1', 'mv2', 'mv3']
        >>> len(sample_plans(plans, 2, "1+1?", 0))
        2
    """
    if k >= len(plans):
        return list(plans)
    digest = hashlib.sha256(f"{seed}:{problem}".encode()).hexdigest()
    picked = set(random.Random(digest).sample(range(len(plans)), k))
    return [plan for index, plan in enumerate(plans) if index in picked]


def tie_break(tied: list[int], problem: str, seed: int) -> int:
    """One of the tied indices, drawn by the seed and the problem (the same each time).

    Example:
        >>> tie_break([3], "1+1?", 0)
        3
        >>> tie_break([0, 1], "1+1?", 0) == tie_break([0, 1], "1+1?", 0)
        True
    """
    if len(tied) == 1:
        return tied[0]
    digest = hashlib.sha256(f"tie:{seed}:{problem}".encode()).hexdigest()
    return random.Random(digest).choice(tied)


def _weights_digest(folder: str) -> str:
    hasher = hashlib.sha256()
    for path in sorted(Path(folder).glob("*.safetensors")) + [Path(folder) / "orchrm.json"]:
        if path.is_file():
            hasher.update(path.read_bytes())
    return hasher.hexdigest()[:16]


@dataclass
class PlanChooser:
    """Scores K candidate plans per problem with the reward model in ``reward_model`` and
    picks the best. Plans come from ``space`` or, with ``orchestrator``, from an LLM."""

    reward_model: str
    k: int = 4
    space: PlanSpace | None = None
    orchestrator: Orchestrator | None = None
    allow_unseen: bool = False
    seed: int = 0
    device: str | None = None
    _scorer: PlanRewardModel | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if (self.space is None) == (self.orchestrator is None):
            raise PlanError("--graph auto takes its plans from a --plan-space or an orchestrator")
        self.record = read_record(Path(self.reward_model))
        if self.space is not None and not self.allow_unseen:
            check_plan_space(self.record, {p.digest: p.name for p in self.space.plans})

    def scorer(self) -> PlanRewardModel:
        """The reward model, loaded on first use."""
        if self._scorer is None:
            self._scorer = load_reward_model(self.record["folder"], self.device)
        return self._scorer

    def identity(self) -> dict[str, Any]:
        """What decides the choices: the plans, K, the orchestrator and the reward model."""
        return {
            "plans": sorted(p.digest for p in self.space.plans) if self.space else None,
            "orchestrator": self.orchestrator is not None,
            "k": self.k,
            "reward_model": _weights_digest(self.record["folder"]),
        }

    def _candidates(self, problem: str) -> tuple[list[Plan], list[Candidate]]:
        if self.space is not None:
            return sample_plans(self.space.plans, self.k, problem, self.seed), []
        assert self.orchestrator is not None
        proposals = self.orchestrator.propose(problem, self.k, self.seed)
        rejected = [
            Candidate(f"orchestrator-{i + 1}", None, p.raw, "orchestrator", rejected=p.rejected)
            for i, p in enumerate(proposals)
            if p.plan is None
        ]
        plans = [p.plan for p in proposals if p.plan is not None]
        if not plans:
            reasons = "; ".join(c.rejected or "" for c in rejected)
            raise PlanError(f"the orchestrator wrote no valid plan ({reasons}); nothing was run")
        return plans, rejected

    def choose(self, problem: str) -> PlanChoice:
        """The best-scored of K candidate plans for ``problem``; plans tied at the best score
        are drawn between by the seed and the problem (not the earlier one each time), and
        the choice records them."""
        plans, rejected = self._candidates(problem)
        source = "plan space" if self.space is not None else "orchestrator"
        scorer = self.scorer()
        length = scorer.max_length
        fitting = {p.digest: scorer.fits(p.text) for p in plans}
        rejected += [
            Candidate(p.name, p.digest, p.text, source,
                      rejected=f"longer than the reward model reads ({length} tokens)")
            for p in plans if not fitting[p.digest]
        ]  # fmt: skip
        plans = [p for p in plans if fitting[p.digest]]
        if not plans:
            raise PlanError(f"every candidate plan is longer than the reward model reads "
                            f"({length} tokens with the problem); nothing was run")  # fmt: skip
        scores = scorer.score(problem, [plan.text for plan in plans])
        scored = [
            Candidate(p.name, p.digest, p.text, source, score=s)
            for p, s in zip(plans, scores, strict=True)
        ]
        top = [i for i, s in enumerate(scores) if s == max(scores)]
        best = tie_break(top, problem, self.seed)
        tied = tuple(plans[i].name for i in top)
        return PlanChoice(plans[best], tuple(scored + rejected), self.record["folder"],
                          tied if len(tied) > 1 else ())  # fmt: skip
