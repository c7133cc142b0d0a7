"""Plan-only baselines for a plan reward model: what can be predicted without reading the
problem. A reward model is worth its cost only where it beats them on held-out pairs.

- :class:`PlanPrior`: the plans ranked by their share of training pairs won (the plan that
  won most pairs first); a pair goes to the higher-ranked plan.
- :class:`PlanFeatureModel`: a Bradley-Terry logistic model on plan features alone (the
  topology and the log of each numeric setting), fitted on the training pairs.

Example:
    >>> pairs = [{"chosen": "topology: a\\n", "rejected": "topology: b\\n"}] * 3
    >>> prior = PlanPrior.fit(pairs)
    >>> prior.accuracy(pairs)
    1.0
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
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

        diffs = []
        for pair in pairs:
            chosen, rejected = features(pair["chosen"]), features(pair["rejected"])
            keys = set(chosen) | set(rejected)
            diffs.append({k: chosen.get(k, 0.0) - rejected.get(k, 0.0) for k in keys})
        weights: dict[str, float] = {k: 0.0 for diff in diffs for k in diff}
        for _ in range(epochs if diffs else 0):
            gradient = {k: l2 * w for k, w in weights.items()}
            for diff in diffs:
                margin = sum(weights[k] * v for k, v in diff.items())
                pull = 1.0 / (1.0 + math.exp(margin))  # 1 - sigmoid(margin)
                for k, v in diff.items():
                    gradient[k] -= pull * v / len(diffs)
            weights = {k: w - rate * gradient[k] for k, w in weights.items()}
        return cls(weights)

    def score(self, text: str) -> float:
        """The plan's score (higher: more likely to win)."""
        return sum(self.weights.get(k, 0.0) * v for k, v in plan_features(text).items())

    def prefers(self, first: str, second: str) -> float:
        """Positive when ``first`` scores above ``second``."""
        return self.score(first) - self.score(second)

    def accuracy(self, pairs: Sequence[Pair]) -> float | None:
        """Pairwise accuracy on ``pairs`` (None: no pairs)."""
        return _accuracy(self.prefers, pairs)
