"""The hybrid reward of TMAS training, one core for every trainer.

Each row has a ``_source``: ``normal`` (the plain problem), ``experience`` (problem, experience
bank and an earlier attempt: the exploit prompt) or ``guideline`` (problem and guideline bank:
the explore prompt). GRPO compares the completions of one prompt with each other (it subtracts
the group's mean reward and divides by its spread), so a component teaches something only where
it differs between completions of the same prompt. The components of a completion's reward:

- ``correctness``: 1 when its ``\\boxed{}`` answer equals the gold answer (math-verify, bounded
  in time in a worker process), for every source;
- ``experience`` (the repair term, experience rows only; None elsewhere and where the row does
  not carry the earlier attempt's answer): 1 when the completion answers and does not repeat
  the answer of an earlier attempt that was wrong (or gave none); where the earlier attempt was
  right it equals correctness.
  Within a group, repeating a refuted answer then ranks below a different wrong answer, which
  ranks below a right one;
- ``novelty`` (guideline rows only; None elsewhere): 1 when a generative judge finds the
  solution's strategy different from every strategy in the bank, counted only for a correct
  answer unless ``novelty_needs_correct`` is off. A row with an empty bank has nothing to differ
  from and is not judged (None). A failed judgement leaves the completion out: every component
  is None (``excluded``), so TRL leaves it out of its group's mean and gives it no advantage.

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

    ``novelty_needs_correct`` counts novelty only for a correct solution (the default: a wrong
    answer is never paid for being different).

    Example:
        >>> RewardWeights(novelty=1.0).novelty, RewardWeights().novelty_needs_correct
        (1.0, True)
    """

    model_config = ConfigDict(extra="forbid")

    correctness: float = Field(default=1.0, ge=0)
    experience: float = Field(default=0.5, ge=0)
    novelty: float = Field(default=0.5, ge=0)
    novelty_needs_correct: bool = True


def _strings(value: Any) -> list[str]:
    """A bank as a list of strings, whether it came as a list, a tuple or a numpy array (a
    parquet column read by pandas)."""
    return [str(item) for item in (list(value) if value is not None else [])]


@dataclass
class Sample:
    """What the reward reads of a training row."""

    source: str
    ground_truth: str
    problem: str = ""
    guidelines: list[str] = field(default_factory=list)
    parent_answer: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Sample:
        """The sample of an exported row (or of TRL's per-row keyword arguments). The kind is
        the row's ``_source``, else the one its ``extra_info`` carries (verl passes only that).

        Example:
            >>> Sample.from_row({"_source": "guideline", "reward_model": {"ground_truth": "7"},
            ...     "extra_info": {"problem": "3+4?", "guidelines": ["Count"]}}).guidelines
            ['Count']
        """
        extra = row.get("extra_info") or {}
        parent = extra.get("parent_answer")  # "": the earlier attempt gave no answer
        return cls(
            source=str(row.get("_source") or extra.get("_source") or "normal"),
            ground_truth=str((row.get("reward_model") or {}).get("ground_truth", "")),
            problem=str(extra.get("problem") or ""),
            guidelines=_strings(extra.get("guidelines")),
            parent_answer=str(parent) if parent is not None else None,
        )


class HybridReward:
    """Scores completions with the hybrid reward; ``judge`` (a :class:`NoveltyJudge`) is needed
    for novelty, and without one novelty is None. ``judge_failures`` counts failed judgements.

    Example:
        >>> reward = HybridReward()
        >>> reward.score(Sample("experience", "7", parent_answer="8"), "\\\\boxed{7}")["total"]
        1.5
    """

    def __init__(self, weights: RewardWeights | None = None, judge: NoveltyJudge | None = None):
        self.weights = weights or RewardWeights()
        self.judge = judge
        self.judge_failures = 0
        self._failures_lock = threading.Lock()

    def correctness(self, sample: Sample, completion: str) -> float:
        """1.0 when the completion's answer equals the gold answer, else 0.0."""
        return 1.0 if is_correct(self._answer(completion), sample.ground_truth or None) else 0.0

    def experience(self, sample: Sample, completion: str, correct: float) -> float | None:
        """The repair term of an experience row: 0.0 when the completion gives no answer or
        repeats the earlier attempt's wrong answer (or, the earlier answer being right, when it
        is wrong), else 1.0; None on other rows and when the row lacks the earlier answer."""
        if sample.source != "experience" or sample.parent_answer is None:
            return None
        answer, parent = self._answer(completion), sample.parent_answer
        if answer is None:
            return 0.0
        if parent and is_correct(parent, sample.ground_truth or None):
            return correct
        return 0.0 if parent and is_correct(answer, parent) else 1.0

    def novelty(self, sample: Sample, completion: str) -> tuple[float | None, str | None]:
        """The judge's verdict on a guideline row with a bank (None elsewhere and without a
        judge) and the judge's error when it failed (the verdict is then None)."""
        if sample.source != "guideline" or self.judge is None or not sample.guidelines:
            return None, None
        try:
            return self.judge.novelty(sample.problem, sample.guidelines, completion), None
        except JudgeError as exc:
            with self._failures_lock:
                self.judge_failures += 1
            return None, str(exc)

    def score(self, sample: Sample, completion: str) -> dict[str, Any]:
        """``{correctness, experience, novelty, total}``; a completion whose judgement failed
        has every component and the total None, ``excluded`` True and the ``judge_error``."""
        correct = self.correctness(sample, completion)
        experience = self.experience(sample, completion, correct)
        weights = self.weights
        novelty: float | None = None
        if not (weights.novelty_needs_correct and not correct):
            novelty, judge_error = self.novelty(sample, completion)
            if judge_error is not None:
                return {**dict.fromkeys((*COMPONENTS, "total")), "excluded": True,
                        "judge_error": judge_error}  # fmt: skip
        elif sample.source == "guideline" and self.judge is not None and sample.guidelines:
            novelty = 0.0  # a wrong answer is not judged, and not paid
        total = (
            weights.correctness * correct
            + weights.experience * (experience or 0.0)
            + weights.novelty * (novelty or 0.0)
        )
        return {
            "correctness": correct,
            "experience": experience,
            "novelty": novelty,
            "total": total,
        }

    @staticmethod
    def _answer(completion: str) -> str | None:
        return extract_answer(completion).value
