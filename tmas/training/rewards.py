"""The hybrid reward of TMAS training, one core for every trainer.

Each row has a ``_source``: ``normal`` (the plain problem), ``experience`` (problem, experience
bank and an earlier attempt: the exploit prompt) or ``guideline`` (problem and guideline bank:
the explore prompt). The components of a completion's reward:

- ``correctness``: 1 when its ``\\boxed{}`` answer equals the gold answer (math-verify, bounded
  in time in a worker process), for every source;
- ``experience``: the same correctness, on experience rows only (None elsewhere): a bonus for
  answering right with the experience in context;
- ``novelty``: on guideline rows only, 1 when a generative judge finds the solution's
  strategy different from every strategy in the bank (None elsewhere, and None when the
  judge failed: recorded, never raised).

``total`` is the weighted sum (a missing component counts 0). The paper does not publish its
weights; the defaults here are our choice.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tmas.answers.grading import is_correct
from tmas.answers.parsing import extract_answer
from tmas.training.novelty import JudgeError, NoveltyJudge

COMPONENTS = ("correctness", "experience", "novelty")


class RewardWeights(BaseModel):
    """Weights of the reward components (our defaults; the paper's are not public).

    ``novelty_needs_correct`` counts novelty only for a correct solution.

    Example:
        >>> RewardWeights(novelty=1.0).novelty
        1.0
    """

    model_config = ConfigDict(extra="forbid")

    correctness: float = Field(default=1.0, ge=0)
    experience: float = Field(default=0.5, ge=0)
    novelty: float = Field(default=0.5, ge=0)
    novelty_needs_correct: bool = False


@dataclass
class Sample:
    """What the reward reads of a training row."""

    source: str
    ground_truth: str
    problem: str = ""
    guidelines: list[str] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Sample:
        """The sample of an exported row (or of TRL's per-row keyword arguments).

        Example:
            >>> Sample.from_row({"_source": "guideline", "reward_model": {"ground_truth": "7"},
            ...     "extra_info": {"problem": "3+4?", "guidelines": ["Count"]}}).guidelines
            ['Count']
        """
        extra = row.get("extra_info") or {}
        return cls(
            source=str(row.get("_source") or "normal"),
            ground_truth=str((row.get("reward_model") or {}).get("ground_truth", "")),
            problem=str(extra.get("problem") or ""),
            guidelines=[str(g) for g in extra.get("guidelines") or []],
        )


class HybridReward:
    """Scores completions with the hybrid reward; ``judge`` (a :class:`NoveltyJudge`) is needed
    for novelty, and without one novelty is None. ``judge_failures`` counts failed judgements.

    Example:
        >>> reward = HybridReward()
        >>> reward.score(Sample("experience", "7"), "3 + 4 = 7, so \\\\boxed{7}")["total"]
        1.5
    """

    def __init__(self, weights: RewardWeights | None = None, judge: NoveltyJudge | None = None):
        self.weights = weights or RewardWeights()
        self.judge = judge
        self.judge_failures = 0
        self._failures_lock = threading.Lock()

    def correctness(self, sample: Sample, completion: str) -> float:
        """1.0 when the completion's answer equals the gold answer, else 0.0."""
        answer = extract_answer(completion).value
        return 1.0 if is_correct(answer, sample.ground_truth or None) else 0.0

    def novelty(self, sample: Sample, completion: str) -> tuple[float | None, str | None]:
        """The judge's verdict on a guideline row (None elsewhere and without a judge) and the
        judge's error when it failed (the verdict is then None)."""
        if sample.source != "guideline" or self.judge is None:
            return None, None
        try:
            return self.judge.novelty(sample.problem, sample.guidelines, completion), None
        except JudgeError as exc:
            with self._failures_lock:
                self.judge_failures += 1
            return None, str(exc)

    def score(self, sample: Sample, completion: str) -> dict[str, Any]:
        """``{correctness, experience, novelty, total}`` (plus ``judge_error`` when the judge
        failed on this completion)."""
        correct = self.correctness(sample, completion)
        experience = correct if sample.source == "experience" else None
        novelty, judge_error = self.novelty(sample, completion)
        if novelty is not None and self.weights.novelty_needs_correct and not correct:
            novelty = 0.0
        weights = self.weights
        total = (
            weights.correctness * correct
            + weights.experience * (experience or 0.0)
            + weights.novelty * (novelty or 0.0)
        )
        scores: dict[str, Any] = {
            "correctness": correct,
            "experience": experience,
            "novelty": novelty,
            "total": total,
        }
        if judge_error is not None:
            scores["judge_error"] = judge_error
        return scores
