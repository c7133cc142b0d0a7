"""The hybrid reward as TRL reward functions: one per component (``correctness``,
``experience``, ``novelty``), weighted by TRL's ``reward_weights``. TRL calls each with the
batch's completions and the dataset's other columns (``_source``, ``reward_model``,
``extra_info``) as keyword arguments; the first call of a batch scores it once through the
reward core and the others read the same scores. A completion whose novelty judgement failed
gets None from every function, which TRL leaves out of its group's baseline and gives no
advantage. Per-``_source`` means are logged through TRL's ``log_metric``
(``reward/<source>/<component>``), with ``judge_failures`` per batch."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from tmas.training.rewards import COMPONENTS, HybridReward, Sample


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or a list of chat messages (conversational).

    Example:
        >>> completion_text([{"role": "assistant", "content": "\\\\boxed{7}"}])
        '\\\\boxed{7}'
    """
    if isinstance(completion, str):
        return completion
    return "".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))


def rows_of(count: int, kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    """TRL's column-wise keyword arguments turned back into ``count`` rows.

    Example:
        >>> rows_of(2, {"_source": ["normal", "guideline"], "trainer_state": None})[1]
        {'_source': 'guideline'}
    """
    columns = {k: v for k, v in kwargs.items() if isinstance(v, list) and len(v) == count}
    return [{k: v[i] for k, v in columns.items()} for i in range(count)]


class TRLRewards:
    """The three TRL reward functions of one :class:`HybridReward`.

    Example:
        >>> rewards = TRLRewards(HybridReward())
        >>> correctness, experience, novelty = rewards.functions()
        >>> batch = dict(completions=["\\\\boxed{7}", "\\\\boxed{8}"], _source=["experience"] * 2,
        ...     reward_model=[{"ground_truth": "7"}] * 2, extra_info=[{"parent_answer": "8"}] * 2)
        >>> correctness(**batch), experience(**batch), novelty(**batch)
        ([1.0, 0.0], [1.0, 0.0], [None, None])
    """

    def __init__(self, reward: HybridReward) -> None:
        self.reward = reward
        self.excluded = 0
        self._batch: tuple[list[Any], list[dict[str, Any]]] | None = None

    def weights(self) -> list[float]:
        """TRL's ``reward_weights``, in the order of :meth:`functions`."""
        w = self.reward.weights
        return [w.correctness, w.experience, w.novelty]

    def functions(self) -> list[Callable[..., list[float | None]]]:
        """``correctness``, ``experience`` and ``novelty`` reward functions (named so, as TRL
        names their metrics after them)."""
        return [self._component(name) for name in COMPONENTS]

    def last_totals(self) -> list[float | None]:
        """The weighted totals of the last batch scored, in its order (None: left out)."""
        return [score["total"] for score in self._batch[1]] if self._batch else []

    def _component(self, name: str) -> Callable[..., list[float | None]]:
        def reward_function(completions: list[Any], **kwargs: Any) -> list[float | None]:
            return [scores[name] for scores in self.scores(completions, kwargs)]

        reward_function.__name__ = name
        return reward_function

    def scores(self, completions: list[Any], kwargs: dict[str, Any]) -> list[dict[str, Any]]:
        """The batch's scores, computed on its first call and reused by the other functions."""
        if self._batch is not None and self._batch[0] is completions:  # the same batch object
            return self._batch[1]
        rows = rows_of(len(completions), kwargs)
        samples = [Sample.from_row(row) for row in rows]
        scores = [
            self.reward.score(sample, completion_text(completion))
            for sample, completion in zip(samples, completions, strict=True)
        ]
        excluded = sum(bool(score.get("excluded")) for score in scores)
        self.excluded += excluded
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            for metric, value in source_means(samples, scores).items():
                log_metric(metric, value)
            log_metric("judge_failures", float(excluded))  # this batch's left-out completions
        self._batch = (completions, scores)  # kept alive, so its identity stays its own
        return scores


def source_means(samples: list[Sample], scores: list[dict[str, Any]]) -> dict[str, float]:
    """Mean of each component and of the total per ``_source`` (components that apply only).

    Example:
        >>> source_means([Sample("normal", "1"), Sample("normal", "1")],
        ...     [{"correctness": 1.0, "experience": None, "novelty": None, "total": 1.0},
        ...      {"correctness": 0.0, "experience": None, "novelty": None, "total": 0.0}])
        {'reward/normal/correctness': 0.5, 'reward/normal/total': 0.5}
    """
    values: dict[str, list[float]] = defaultdict(list)
    for sample, score in zip(samples, scores, strict=True):
        for name in (*COMPONENTS, "total"):
            if score.get(name) is not None:
                values[f"reward/{sample.source}/{name}"].append(float(score[name]))
    return {metric: sum(v) / len(v) for metric, v in values.items()}
