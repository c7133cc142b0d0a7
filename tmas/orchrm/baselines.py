"""Plan-only baselines for a plan reward model: what can be predicted without reading the
problem. A reward model is worth its cost only where it beats them on held-out pairs.

- :class:`PlanPrior`: the plans ranked by their share of training pairs won (the plan that
  won most pairs first); a pair goes to the higher-ranked plan.
- :class:`PlanFeatureModel`: a Bradley-Terry logistic model on plan features alone (the
  topology and the log of each numeric setting), fitted on the training pairs.
- :class:`FamilyPlanModel`: the same with each plan feature crossed with the problem's family
  (a label such as the kind of a generated problem): the simplest model that lets the winning
  plan depend on the problem. Where it does not beat the prior, no problem-reading reward
  model has a signal to learn from those labels.
- :func:`leave_one_problem_out`: a model's pairwise accuracy on each problem's pairs when
  fitted on every other problem's, with a 95% interval over problems.

Example:
    >>> pairs = [{"chosen": "topology: a\\n", "rejected": "topology: b\\n"}] * 3
    >>> prior = PlanPrior.fit(pairs)
    >>> prior.accuracy(pairs)
    1.0
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

Pair = dict[str, Any]


def _accuracy(prefers: Any, pairs: Sequence[Pair]) -> float | None:
    """The share of pairs whose chosen plan ``prefers(chosen, rejected)`` ranks first (a tie
    counts half)."""
    if not pairs:
        return None
    score = 0.0
    for pair in pairs:
        verdict = prefers(pair["chosen"], pair["rejected"])
        score += 1.0 if verdict > 0 else 0.5 if verdict == 0 else 0.0
    return score / len(pairs)


@dataclass
class PlanPrior:
    """Plans ranked by the share of their training pairs they won."""

    win_rate: dict[str, float]

    @classmethod
    def fit(cls, pairs: Sequence[Pair]) -> PlanPrior:
        """The win rates of the plans of ``pairs``."""
        wins, seen = Counter(), Counter()
        for pair in pairs:
            wins[pair["chosen"]] += 1
            seen[pair["chosen"]] += 1
            seen[pair["rejected"]] += 1
        return cls({plan: wins[plan] / seen[plan] for plan in seen})

    def best(self) -> str:
        """The plan that won the largest share of its pairs."""
        return max(self.win_rate, key=lambda plan: self.win_rate[plan])

    def prefers(self, first: str, second: str) -> float:
        """Positive when ``first`` ranks above ``second`` (unseen plans rank at 0.5)."""
        return self.win_rate.get(first, 0.5) - self.win_rate.get(second, 0.5)

    def accuracy(self, pairs: Sequence[Pair]) -> float | None:
        """Pairwise accuracy on ``pairs`` (None: no pairs)."""
        return _accuracy(self.prefers, pairs)


def plan_features(text: str) -> dict[str, float]:
    """A plan's features: its topology (one-hot) and the log of each numeric setting.

    Example:
        >>> plan_features("topology: tmas\\nsettings: {n_candidates: 3}\\n")
        {'topology=tmas': 1.0, 'n_candidates': 2.0}
    """
    document = yaml.safe_load(text) or {}
    features = {f"topology={document.get('topology')}": 1.0}
    for key, value in sorted((document.get("settings") or {}).items()):
        if isinstance(value, bool):
            features[key] = float(value)
        elif isinstance(value, int | float):
            features[key] = math.log2(1.0 + float(value))
        elif isinstance(value, list) and all(isinstance(v, int | float) for v in value):
            features[key] = math.log2(1.0 + float(sum(value)))
    return features


def _difference(first: dict[str, float], second: dict[str, float]) -> dict[str, float]:
    return {k: first.get(k, 0.0) - second.get(k, 0.0) for k in set(first) | set(second)}


def fit_bradley_terry(
    diffs: Sequence[dict[str, float]], epochs: int = 300, rate: float = 0.5, l2: float = 1e-3
) -> dict[str, float]:
    """The weights w of P(chosen beats rejected) = sigmoid(w . d) for the feature differences
    ``diffs`` (chosen minus rejected), by full-batch gradient descent with an L2 penalty.

    Example:
        >>> weights = fit_bradley_terry([{"a": 1.0}] * 4)
        >>> weights["a"] > 1
        True
    """
    weights: dict[str, float] = {k: 0.0 for diff in diffs for k in diff}
    for _ in range(epochs if diffs else 0):
        gradient = {k: l2 * w for k, w in weights.items()}
        for diff in diffs:
            margin = sum(weights[k] * v for k, v in diff.items())
            pull = 1.0 / (1.0 + math.exp(margin))  # 1 - sigmoid(margin)
            for k, v in diff.items():
                gradient[k] -= pull * v / len(diffs)
        weights = {k: w - rate * gradient[k] for k, w in weights.items()}
    return weights


@dataclass
class PlanFeatureModel:
    """P(chosen beats rejected) = sigmoid(w . (f(chosen) - f(rejected))), f the plan features
    alone, fitted by gradient descent with a small L2 penalty."""

    weights: dict[str, float] = field(default_factory=dict)

    @classmethod
    def fit(
        cls, pairs: Sequence[Pair], epochs: int = 300, rate: float = 0.5, l2: float = 1e-3
    ) -> PlanFeatureModel:
        """The model fitted on ``pairs`` (full-batch gradient descent, deterministic)."""
        cache: dict[str, dict[str, float]] = {}

        def features(text: str) -> dict[str, float]:
            return cache.setdefault(text, plan_features(text))

        diffs = [_difference(features(p["chosen"]), features(p["rejected"])) for p in pairs]
        return cls(fit_bradley_terry(diffs, epochs, rate, l2))

    def score(self, text: str) -> float:
        """The plan's score (higher: more likely to win)."""
        return sum(self.weights.get(k, 0.0) * v for k, v in plan_features(text).items())

    def prefers(self, first: str, second: str) -> float:
        """Positive when ``first`` scores above ``second``."""
        return self.score(first) - self.score(second)

    def accuracy(self, pairs: Sequence[Pair]) -> float | None:
        """Pairwise accuracy on ``pairs`` (None: no pairs)."""
        return _accuracy(self.prefers, pairs)


Family = Callable[[Pair], str]


def family_features(text: str, family: str) -> dict[str, float]:
    """A plan's features, each also crossed with the problem's ``family``.

    Example:
        >>> family_features("topology: a\\n", "trap")
        {'topology=a': 1.0, 'trap x topology=a': 1.0}
    """
    plain = plan_features(text)
    return {**plain, **{f"{family} x {k}": v for k, v in plain.items()}}


@dataclass
class FamilyPlanModel:
    """Bradley-Terry on plan features and plan x problem-family features: the winning plan may
    depend on the family.

    Example:
        >>> a, b = "topology: a\\n", "topology: b\\n"
        >>> pairs = [{"chosen": a, "rejected": b, "family": "easy"},
        ...          {"chosen": b, "rejected": a, "family": "trap"}] * 3
        >>> model = FamilyPlanModel.fit(pairs, lambda pair: pair["family"])
        >>> model.accuracy(pairs), PlanPrior.fit(pairs).accuracy(pairs)
        (1.0, 0.5)
    """

    weights: dict[str, float]
    family_of: Family

    @classmethod
    def fit(cls, pairs: Sequence[Pair], family_of: Family, epochs: int = 300) -> FamilyPlanModel:
        """The model fitted on ``pairs``, ``family_of(pair)`` naming each pair's family."""
        diffs = [
            _difference(family_features(p["chosen"], family_of(p)),
                        family_features(p["rejected"], family_of(p)))
            for p in pairs
        ]  # fmt: skip
        return cls(fit_bradley_terry(diffs, epochs), family_of)

    def prefers_pair(self, pair: Pair) -> float:
        """Positive when the model ranks the pair's chosen plan first."""
        family = self.family_of(pair)
        score = {
            side: sum(self.weights.get(k, 0.0) * v
                      for k, v in family_features(pair[side], family).items())
            for side in ("chosen", "rejected")
        }  # fmt: skip
        return score["chosen"] - score["rejected"]

    def accuracy(self, pairs: Sequence[Pair]) -> float | None:
        """Pairwise accuracy on ``pairs`` (None: no pairs)."""
        if not pairs:
            return None
        verdicts = [self.prefers_pair(pair) for pair in pairs]
        return sum(1.0 if v > 0 else 0.5 if v == 0 else 0.0 for v in verdicts) / len(pairs)


def leave_one_problem_out(
    pairs: Sequence[Pair], fit: Callable[[Sequence[Pair]], Any]
) -> dict[str, Any]:
    """Each problem's pairs scored by ``fit(pairs of every other problem)`` (a model with an
    ``accuracy(pairs)``): the pooled pairwise accuracy, a 95% bootstrap interval over problems
    (then pairs), the count of problems and pairs, and the per-problem ``scores`` (for a
    paired comparison of two models on the same problems).

    Example:
        >>> pairs = [{"chosen": "topology: a\\n", "rejected": "topology: b\\n",
        ...           "problem_id": str(i)} for i in range(4)]
        >>> result = leave_one_problem_out(pairs, PlanPrior.fit)
        >>> result["accuracy"], result["problems"]
        (1.0, 4)
    """
    from tmas.eval.intervals import bootstrap_mean

    by_problem: dict[str, list[Pair]] = {}
    for pair in pairs:
        by_problem.setdefault(str(pair["problem_id"]), []).append(pair)
    scores = []
    for problem, own in by_problem.items():
        rest = [p for p in pairs if str(p["problem_id"]) != problem]
        model = fit(rest)
        scores.append([model.accuracy([pair]) for pair in own])
    if not scores:
        return {"accuracy": None, "interval": None, "problems": 0, "pairs": 0, "scores": []}
    accuracy, low, high = bootstrap_mean(scores)
    pooled = sum(map(sum, scores)) / sum(map(len, scores))
    return {"accuracy": pooled, "problem_mean": accuracy, "interval": [low, high],
            "problems": len(scores), "pairs": sum(map(len, scores)), "scores": scores}  # fmt: skip
