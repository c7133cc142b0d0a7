"""Inputs shared by the two agents that reflect on a finished rollout (experience, guideline)."""

from __future__ import annotations

from typing import Any

from tmas.nodes.common import live_candidates
from tmas.nodes.prompts import clip
from tmas.nodes.tasks import TaskRequest

REFLECTION_PROMPTS: dict[str, tuple[str, ...]] = {"system": (), "user": ()}
"""The templates of the experience and guideline agents, filled with their task's fields."""

REFLECTION_TASK_FIELDS = (
    "problem",
    "iteration",
    "candidate_index",
    "solution",
    "summary",
    "mean_score",
)
"""What every reflection task carries."""


def reflection_tasks(request: TaskRequest) -> list[dict[str, Any]]:
    """One task per candidate (but failed ones): its rollout, its verification summary and mean
    score.

    Example:
        >>> state = {"problem": "p", "iteration": 1, "candidates": [{"index": 0, "text": "t"}],
        ...          "summaries": [{"candidate_index": 0, "text": "fine"}]}
        >>> reflection_tasks(TaskRequest(state))[0]["summary"]
        'fine'
    """
    state, config = request.state, request.config
    summaries = {s["candidate_index"]: s for s in state.get("summaries", [])}
    return [
        {
            "problem": state["problem"],
            "iteration": state["iteration"],
            "candidate_index": c["index"],
            "solution": clip(c["text"], config.rollout_chars_in_prompt),
            "summary": summaries.get(c["index"], {}).get("text", ""),
            "mean_score": summaries.get(c["index"], {}).get("mean_score"),
        }
        for c in live_candidates(state)
    ]
