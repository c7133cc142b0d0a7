"""Opening an iteration: retire last iteration's rollouts and plan how each candidate is made."""

from __future__ import annotations

from typing import Any

from tmas.config import TMASConfig
from tmas.nodes.prompts import clip
from tmas.seeding import derive_seed, draw_uniform
from tmas.state import RESET, Mode, Plan, RunState


def choose_mode(config: TMASConfig, iteration: int, index: int) -> Mode:
    """Epsilon-greedy choice for one candidate, seeded by (seed, iteration, index).

    Example:
        >>> choose_mode(TMASConfig(epsilon=1.0), 2, 0), choose_mode(TMASConfig(), 1, 0)
        ('explore', 'initial')
    """
    if iteration == 1:
        return "initial"
    explore = draw_uniform(config.seed, "mode", iteration, index) < config.epsilon
    return "explore" if explore else "exploit"


def plan_iteration(config: TMASConfig, iteration: int, previous_count: int) -> list[Plan]:
    """The plans of every candidate of ``iteration``.

    Example:
        >>> [p["mode"] for p in plan_iteration(TMASConfig(n_candidates=2), 1, 0)]
        ['initial', 'initial']
    """
    plans: list[Plan] = []
    for index in range(config.n_candidates):
        mode = choose_mode(config, iteration, index)
        if mode == "exploit" and previous_count == 0:
            mode = "explore"
        parent = index % previous_count if mode == "exploit" else None
        seed = derive_seed(config.seed, "solve", iteration, index)
        plans.append(
            {
                "iteration": iteration,
                "index": index,
                "mode": mode,
                "parent_index": parent,
                "seed": seed,
            }
        )
    return plans


def retire_rollouts(state: RunState, max_chars: int) -> list[dict[str, Any]]:
    """Compact records of the current rollouts, joined with their verification summaries.

    Example:
        >>> retire_rollouts({"candidates": [{"index": 0, "text": "t", "answer": "1"}],
        ...                  "summaries": [{"candidate_index": 0, "text": "ok",
        ...                                 "mean_score": 0.9}]}, 100)[0]["summary"]
        'ok'
    """
    summaries = {s["candidate_index"]: s for s in state.get("summaries", [])}
    retired = []
    for candidate in sorted(state.get("candidates", []), key=lambda c: c["index"]):
        summary = summaries.get(candidate["index"], {})
        retired.append(
            {
                "index": candidate["index"],
                "text": clip(candidate["text"], max_chars),
                "answer": candidate["answer"],
                "summary": summary.get("text", ""),
                "mean_score": summary.get("mean_score"),
            }
        )
    return retired


class StartIteration:
    """Node: advance the iteration counter, retire rollouts, clear per-iteration lists, plan.

    Example:
        >>> update = StartIteration(TMASConfig(n_candidates=2))({"problem": "1+1?"})
        >>> update["iteration"], len(update["plans"])
        (1, 2)
    """

    def __init__(self, config: TMASConfig) -> None:
        self.config = config

    def __call__(self, state: RunState) -> dict[str, Any]:
        iteration = state.get("iteration", 0) + 1
        previous = retire_rollouts(state, self.config.rollout_chars_in_prompt)
        return {
            "iteration": iteration,
            "previous": previous,
            "plans": plan_iteration(self.config, iteration, len(previous)),
            "candidates": [RESET],
            "verifications": [RESET],
            "summaries": [RESET],
            "experience_proposals": [RESET],
            "guideline_proposals": [RESET],
        }
