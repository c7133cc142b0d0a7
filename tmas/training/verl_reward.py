"""The hybrid reward as verl's custom reward function.

In a verl config::

    custom_reward_function:
      path: /path/to/site-packages/tmas/training/verl_reward.py
      name: compute_score

with the parquet that ``tmas export rollouts`` writes. verl passes ``data_source``,
``solution_str``, ``ground_truth`` and ``extra_info``; the row's kind is read from
``extra_info["mode"]`` (exploit: experience, explore: guideline, otherwise normal). The
novelty judge is an OpenAI-compatible endpoint named by ``TMAS_JUDGE_BASE_URL`` and
``TMAS_JUDGE_MODEL`` (key in ``TMAS_API_KEY``); without them novelty is not scored. Weights
come from ``TMAS_REWARD_WEIGHTS`` (JSON, e.g. ``{"novelty": 1.0}``).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any

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
    source = SOURCE_OF_MODE.get(str(extra.get("mode")), "normal")
    if data_source == "math_grm":
        source = "guideline"
    row = {"_source": source, "reward_model": {"ground_truth": ground_truth}, "extra_info": extra}
    scores = _reward().score(Sample.from_row(row), solution_str)
    return {
        "score": scores["total"],
        **{name: scores[name] or 0.0 for name in COMPONENTS},
        "judge_failed": 1.0 if "judge_error" in scores else 0.0,
    }
