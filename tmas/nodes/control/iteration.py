"""Opening an iteration: retire last iteration's rollouts and plan how each candidate is made."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tmas.config import TMASConfig
from tmas.nodes.channels import ChannelSpec, channel_values, iteration_resets
from tmas.nodes.common import live_candidates
from tmas.nodes.control.planners import (
    BUILTIN_MODES,
    PlanChoice,
    PlannerEntry,
    PlanRequest,
    known_planner,
    option_problems,
    planner_entry,
)
from tmas.nodes.prompts import clip
from tmas.seeding import derive_seed
from tmas.state import RESET, Plan, RunState


def round_size(config: TMASConfig, iteration: int, final_round_size: int | None = None) -> int:
    """Candidates of ``iteration``: ``round_widths`` when set, else N, or ``final_round_size``
    in the last iteration when the topology asks for one (PaCoRe ends with one sample).

    Example:
        >>> round_size(TMASConfig(n_candidates=4, max_iterations=3), 3, final_round_size=1)
        1
        >>> round_size(TMASConfig(round_widths=[8, 4, 2]), 3, final_round_size=1)
        2
    """
    last = iteration >= config.max_iterations
    if final_round_size is not None and last and not config.round_widths:
        return final_round_size
    return config.width(iteration)


def checked_choice(
    choice: PlanChoice, planner: str, entry: PlannerEntry, previous: list[int]
) -> PlanChoice:
    """``choice`` when its mode is one the planner may choose and the rollouts it names exist;
    ValueError naming the planner otherwise.

    Example:
        >>> checked_choice(PlanChoice("exploit", parent_index=4), "refine", planner_entry("refine"),
        ...                [0, 1])
        Traceback (most recent call last):
        ...
        ValueError: planner 'refine' names rollout 4 of the previous iteration; it has [0, 1]
    """
    if choice.mode not in (*BUILTIN_MODES, *entry.modes):
        raise ValueError(
            f"planner {planner!r} chose mode {choice.mode!r}, which it does not declare "
            f"(register_planner({planner!r}, modes=({choice.mode!r},)))"
        )
    named = [choice.parent_index] if choice.parent_index is not None else []
    for index in [*named, *choice.references]:
        if index not in previous:
            raise ValueError(
                f"planner {planner!r} names rollout {index} of the previous iteration; "
                f"it has {sorted(previous)}"
            )
    return choice


def plan_iteration(
    config: TMASConfig,
    iteration: int,
    previous: list[int],
    planner: str = "epsilon_greedy",
    *,
    final_round_size: int | None = None,
    rollouts: list[dict[str, Any]] | None = None,
    channels: Mapping[str, Any] | None = None,
    **options: Any,
) -> list[Plan]:
    """The plans of every candidate of ``iteration``.

    ``previous`` holds the indices of the previous iteration's rollouts (a failed solver call
    left none); a plan names the rollouts it reads by those indices, so links survive failed
    calls; ``rollouts`` are their compact records and ``channels`` the values of the run's
    declared channels (``request.channels``). Iteration 1 samples plainly; the registered
    ``planner`` (with its ``options``) decides the later ones
    (:mod:`tmas.nodes.control.planners`); :func:`round_size` gives the number of candidates.

    Example:
        >>> [p["mode"] for p in plan_iteration(TMASConfig(n_candidates=2), 1, [])]
        ['initial', 'initial']
        >>> plan_iteration(TMASConfig(n_candidates=3), 2, [0, 1, 2], "aggregate")[0]["references"]
        [0, 2]
        >>> [p["parent_index"] for p in plan_iteration(TMASConfig(n_candidates=3), 2, [0, 2],
        ...                                            "refine")]
        [0, 2, 2]
    """
    entry = planner_entry(planner)
    plans: list[Plan] = []
    for index in range(round_size(config, iteration, final_round_size)):
        choice = PlanChoice("initial")
        if iteration > 1:
            request = PlanRequest(config, iteration, index, list(previous), list(rollouts or []),
                                  dict(channels or {}))  # fmt: skip
            choice = checked_choice(entry.plan(request, **options), planner, entry, previous)
        plans.append(
            {
                "iteration": iteration,
                "index": index,
                "mode": choice.mode,
                "parent_index": choice.parent_index,
                "seed": derive_seed(config.seed, "solve", iteration, index),
                "references": list(choice.references),
            }
        )
    return plans


def retired_chars(config: TMASConfig) -> int:
    """How much of each rollout (its end) the next iteration keeps: what its longest prompt of
    an earlier rollout shows (a repair or aggregation, or a PaCoRe reference).

    Example:
        >>> retired_chars(TMASConfig(reference_chars=3000))
        3000
    """
    return max(config.rollout_chars_in_prompt, config.reference_chars)


def retire_rollouts(state: RunState, max_chars: int) -> list[dict[str, Any]]:
    """Compact records of the current rollouts (failed solver calls left out), joined with their
    verification summaries.

    Example:
        >>> retire_rollouts({"candidates": [{"index": 0, "text": "t", "answer": "1"}],
        ...                  "summaries": [{"candidate_index": 0, "text": "ok",
        ...                                 "mean_score": 0.9}]}, 100)[0]["summary"]
        'ok'
    """
    summaries = {s["candidate_index"]: s for s in state.get("summaries", [])}
    retired = []
    for candidate in live_candidates(state):
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


FRESH_RUN: dict[str, Any] = {
    "experience_bank": [],
    "guideline_bank": [],
    "history": [],
    "vote_totals": {},
    "final_answer": None,
    "stop_reason": None,
    "extras": RESET,
}


class StartIteration:
    """Node: advance the iteration counter, retire rollouts, clear per-iteration lists, plan.

    Example:
        >>> update = StartIteration(TMASConfig(n_candidates=2))({"problem": "1+1?"})
        >>> update["iteration"], len(update["plans"])
        (1, 2)
    """

    def __init__(
        self,
        config: TMASConfig,
        planner: str = "epsilon_greedy",
        *,
        final_round_size: int | None = None,
        channels: Mapping[str, ChannelSpec] | None = None,
        **options: Any,
    ) -> None:
        known_planner(planner)
        if problems := option_problems(planner, options):
            raise ValueError("; ".join(problems))
        self.config = config
        self.planner = planner
        self.final_round_size = final_round_size
        self.channels = dict(channels or {})
        self.options = options

    # typed as a plain dict: LangGraph would hand a RunState-typed node RunState's keys only
    def __call__(self, state: dict[str, Any]) -> dict[str, Any]:
        if state.get("stop_reason"):
            # new input on a finished thread: a new run, nothing carried over
            emptied = {name: spec.reset() for name, spec in self.channels.items()}
            return {**self._fresh(state, 1, []), **FRESH_RUN, **emptied}
        iteration = state.get("iteration", 0) + 1
        return self._fresh(state, iteration, retire_rollouts(state, retired_chars(self.config)))

    def _fresh(
        self, state: RunState, iteration: int, previous: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {
            "iteration": iteration,
            "previous": previous,
            "plans": plan_iteration(
                self.config,
                iteration,
                [rollout["index"] for rollout in previous],
                self.planner,
                final_round_size=self.final_round_size,
                rollouts=previous,
                channels=channel_values(state, self.channels),
                **self.options,
            ),
            **iteration_resets(self.channels),
            "candidates": [RESET],
            "verifications": [RESET],
            "summaries": [RESET],
            "experience_proposals": [RESET],
            "guideline_proposals": [RESET],
        }
