"""Stop conditions: when a loop ends, registered by name.

A loop edge names one or more (``until: run_finished`` or ``until: [run_finished, consensus]``).
A condition is ``(state) -> bool``, asked after the loop's last node ran; the loop ends when one
holds, and the first that holds becomes the run's ``stop_reason`` unless a node set one (so a
run that left its loop is finished, whichever condition ended it). ``run_finished`` holds once
a node set a stop reason (``record_iteration`` does at ``max_iterations``). A plugin adds its
own::

    from tmas.nodes.control.stop_rules import register_stop

    @register_stop("confident")
    def confident(state):
        record = state["history"][-1]
        return (record["mean_score"] or 0) >= 0.9
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tmas.answers.parsing import normalize_answer
from tmas.registration import declare, owner_of, registry
from tmas.state import failed

StopCondition = Callable[[Mapping[str, Any]], bool]

CONSENSUS_MIN_SCORE = 0.7


def register_stop(name: str) -> Callable[[StopCondition], StopCondition]:
    """Register a loop stop condition ``(state) -> bool`` (True ends the loop) as ``name`` (in
    :func:`tmas.registration.registry`).

    Example:
        >>> @register_stop("doc_example_never")
        ... def never(state):
        ...     return False
        >>> "doc_example_never" in registry().stops
        True
    """
    return lambda condition: declare("stops", name, condition, owner_of(condition))


def stop_condition(name: str) -> StopCondition:
    """The stop condition registered as ``name``; ValueError naming the known ones otherwise.

    Example:
        >>> stop_condition("run_finished")({"stop_reason": "consensus"})
        True
    """
    return registry().stops[name]  # type: ignore[no-any-return]


@register_stop("run_finished")
def run_finished(state: Mapping[str, Any]) -> bool:
    """True once the iteration record set a stop reason (max iterations or early stop).

    Example:
        >>> run_finished({"stop_reason": "max_iterations"}), run_finished({})
        (True, False)
    """
    return bool(state.get("stop_reason"))


@register_stop("consensus")
def consensus(state: Mapping[str, Any]) -> bool:
    """True when every candidate of the iteration whose call did not fail gave the same
    readable answer and the iteration's mean verification score is at least 0.7.

    Example:
        >>> consensus({"candidates": [{"answer": "3"}, {"answer": "3.0"}, {"error": "x"}],
        ...            "history": [{"mean_score": 0.8}]})
        True
        >>> consensus({"candidates": [{"answer": "3"}, {"answer": None}],
        ...            "history": [{"mean_score": 0.9}]})
        False
    """
    answers = [c.get("answer") for c in state.get("candidates") or [] if not failed(c)]
    keys = {normalize_answer(a) for a in answers}
    history = state.get("history") or [{}]
    score = history[-1].get("mean_score") or 0
    return len(keys) == 1 and None not in keys and score >= CONSENSUS_MIN_SCORE


def first_holding(conditions: list[str], state: Mapping[str, Any]) -> str | None:
    """The first of ``conditions`` that holds on ``state`` (None when none does).

    Example:
        >>> first_holding(["run_finished", "consensus"], {"stop_reason": "max_iterations"})
        'run_finished'
    """
    return next((name for name in conditions if stop_condition(name)(state)), None)


def early_conditions(conditions: list[str]) -> list[str]:
    """The conditions of a loop that can end it before a node sets a stop reason (all but
    ``run_finished``, which holds once one did).

    Example:
        >>> early_conditions(["run_finished", "consensus"]), early_conditions(["run_finished"])
        (['consensus'], [])
    """
    return [name for name in conditions if name != "run_finished"]


class RecordStop:
    """The node a loop exits through when a condition other than ``run_finished`` ended it:
    it sets ``stop_reason`` to that condition's name (a run that left its loop is finished).

    Example:
        >>> RecordStop(["consensus"])({"candidates": [{"answer": "3"}],
        ...                             "history": [{"mean_score": 0.9}]})
        {'stop_reason': 'consensus'}
    """

    def __init__(self, conditions: list[str]) -> None:
        self.conditions = conditions

    def __call__(self, state: dict[str, Any]) -> dict[str, Any]:
        if state.get("stop_reason"):
            return {}
        return {"stop_reason": first_holding(self.conditions, state) or "stopped"}
