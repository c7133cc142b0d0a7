"""The hybrid reward as verl's custom reward function.

In a verl config::

    custom_reward_function:
      path: /path/to/site-packages/tmas/training/verl_reward.py
      name: compute_score

with the parquet that ``tmas export rollouts`` writes. verl passes ``data_source``,
``solution_str``, ``ground_truth`` and ``extra_info`` (not the row's ``_source`` column), so
the export copies the row's kind and its banks into ``extra_info``: the kind is read from
``extra_info["_source"]``, else from ``extra_info["mode"]`` (exploit: experience, explore:
guideline), else from ``data_source`` (``math_grm``: guideline), else normal. verl cannot leave
a completion out of its group: a failed judgement scores the total without novelty and is
flagged ``judge_failed``. The
novelty judge is an OpenAI-compatible endpoint named by ``TMAS_JUDGE_BASE_URL`` and
``TMAS_JUDGE_MODEL`` (key in ``TMAS_API_KEY``); without them novelty is not scored. Weights
come from ``TMAS_REWARD_WEIGHTS`` (JSON, e.g. ``{"novelty": 1.0}``).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any

from tmas.training.data_files import SOURCES
from tmas.training.novelty import NoveltyJudge
from tmas.training.rewards import COMPONENTS, HybridReward, RewardWeights, Sample
from tmas.training.rollouts import SOURCE_OF_MODE


@lru_cache(maxsize=1)
def _reward() -> HybridReward:
    weights = RewardWeights(**json.loads(os.environ.get("TMAS_REWARD_WEIGHTS") or "{}"))
    base_url, model = os.environ.get("TMAS_JUDGE_BASE_URL"), os.environ.get("TMAS_JUDGE_MODEL")
    judge = None
    if base_url and model:
        from tmas.llm.openai_compat import make_openai_chat_model

        chat = make_openai_chat_model(
            base_url=base_url, model=model, max_tokens=64, temperature=0.0, max_retries=2
        )
        judge = NoveltyJudge(chat)
    return HybridReward(weights, judge)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict[str, Any] | None = None,
    **_: Any,
) -> dict[str, Any]:
    """verl's reward: ``score`` (the weighted total) and each component (None counts 0).

    Example:
        >>> compute_score("math", "so \\\\boxed{7}", "7", {"mode": "initial"})["score"]
        1.0
    """
    extra = dict(extra_info or {})
    source = row_kind(data_source, extra)
    row = {"_source": source, "reward_model": {"ground_truth": ground_truth}, "extra_info": extra}
    reward = _reward()
    sample = Sample.from_row(row)
    scores = reward.score(sample, solution_str)
    failed = "judge_error" in scores
    if failed:  # verl has no "left out": score what does not need the judge
        scores = HybridReward(reward.weights).score(sample, solution_str)
    return {
        "score": scores["total"],
        **{name: scores[name] or 0.0 for name in COMPONENTS},
        "judge_failed": 1.0 if failed else 0.0,
    }


def row_kind(data_source: str, extra_info: dict[str, Any]) -> str:
    """The row's ``_source`` from what verl passes.

    Example:
        >>> row_kind("math", {"_source": "experience"}), row_kind("math_grm", {})
        ('experience', 'guideline')
    """
    kind = extra_info.get("_source")
    if kind in SOURCES:
        return str(kind)
    if str(extra_info.get("mode")) in SOURCE_OF_MODE:
        return SOURCE_OF_MODE[str(extra_info["mode"])]
    return "guideline" if data_source == "math_grm" else "normal"
