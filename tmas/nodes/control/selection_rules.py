"""Selection rules: how a topology turns its iterations' answers into the run's final answer.

A rule reads the record of the iteration that just ended (its answers and verification scores)
and the running verification-weighted vote over every iteration so far, and names the answer.
Each bundled topology declares the rule its method uses (``record_iteration``'s ``selection``
parameter); ``--set selection=NAME`` overrides it. Register your own with
``register_selection`` (exported by ``tmas.plugin``)::

    @register_selection("first_answer")
    def first_answer(record, totals):
        return next((a for a in record["answers"] if a is not None), None)

A rule that also takes a ``channels`` keyword gets the run's declared state channels
(:mod:`tmas.nodes.channels`) by name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Annotated

from pydantic import AfterValidator

from tmas.config import TMASConfig
from tmas.nodes.control.voting import tally, winner
from tmas.registration import lookup, register_in
from tmas.state import IterationRecord

SelectionRule = Callable[[IterationRecord, Mapping[str, float]], str | None]

SELECTION_RULES: dict[str, SelectionRule] = {}
DEFAULT_SELECTION = "vote_all"


def register_selection(name: str) -> Callable[[SelectionRule], SelectionRule]:
    """Register ``rule(record, totals) -> answer or None`` as the selection rule ``name``.

    Example:
        >>> @register_selection("doc_example_first")
        ... def first(record, totals):
        ...     return record["answers"][0]
        >>> "doc_example_first" in SELECTION_RULES
        True
    """
    return register_in(SELECTION_RULES, "selection rule", name)


def apply_rule(
    rule: SelectionRule,
    record: IterationRecord,
    totals: Mapping[str, float],
    channels: Mapping[str, object],
) -> str | None:
    """``rule``'s answer; a rule taking ``channels`` is given them.

    Example:
        >>> def from_channel(record, totals, channels):
        ...     return channels["pick"]
        >>> apply_rule(from_channel, {}, {}, {"pick": "7"}), apply_rule(vote_all, {}, {"7": 1}, {})
        ('7', '7')
    """
    if "channels" in inspect.signature(rule).parameters:
        return rule(record, totals, channels=channels)  # type: ignore[call-arg]
    return rule(record, totals)


def selection_rule(name: str) -> SelectionRule:
    """The rule registered as ``name``; ValueError naming the known rules otherwise.

    Example:
        >>> selection_rule("no_such_rule")
        Traceback (most recent call last):
        ...
        ValueError: unknown selection rule 'no_such_rule'; known: best_scored_last, ...
    """
    return lookup(SELECTION_RULES, "selection rule", name)  # type: ignore[no-any-return]


def known_selection(name: str) -> str:
    """``name`` when a selection rule is registered under it (ValueError otherwise).

    Example:
        >>> known_selection("vote_last")
        'vote_last'
    """
    selection_rule(name)
    return name


SelectionName = Annotated[str, AfterValidator(known_selection)]
"""A node parameter naming a registered selection rule (checked with the spec)."""


def describe_selection(name: str) -> str:
    """The first sentence of the rule's docstring (the name alone for an unknown rule).

    Example:
        >>> describe_selection("vote_last")
        'The verification-weighted vote over the last iteration only.'
    """
    rule = SELECTION_RULES.get(name)
    doc = " ".join((rule.__doc__ or "").split()) if rule else ""
    return doc.split(". ")[0].rstrip(".") + "." if doc else name


def selection_of(state: Mapping, config: Mapping) -> str:
    """The selection rule a saved run used: recorded in its state, else (runs saved before it
    was recorded) what its config said.

    Example:
        >>> selection_of({}, {"vote_scope": "last"}), selection_of({"selection": "x"}, {})
        ('vote_last', 'x')
    """
    if state.get("selection"):
        return str(state["selection"])
    try:
        chosen = TMASConfig(**config).selection
    except ValueError:
        chosen = None
    return chosen or DEFAULT_SELECTION


@register_selection("vote_all")
def vote_all(record: IterationRecord, totals: Mapping[str, float]) -> str | None:
    """The verification-weighted vote over every iteration so far (TMAS).

    Example:
        >>> vote_all({"vote": {"3": 1.0}}, {"3": 1.0, "4": 2.5})
        '4'
    """
    return winner(dict(totals))


@register_selection("vote_last")
def vote_last(record: IterationRecord, totals: Mapping[str, float]) -> str | None:
    """The verification-weighted vote over the last iteration only.

    Example:
        >>> vote_last({"vote": {"3": 1.0}}, {"3": 1.0, "4": 2.5})
        '3'
    """
    return winner(record["vote"])


@register_selection("majority_last")
def majority_last(record: IterationRecord, totals: Mapping[str, float]) -> str | None:
    """The most frequent answer of the last iteration, unweighted: the method's own output for
    PaCoRe (its single last-round sample), RSA (its final population) and self-refine or
    verify-refine (the last refinements). Failed calls and unreadable answers do not vote.

    Example:
        >>> majority_last({"answers": ["4", None, "3", "4.0"]}, {})
        '4'
    """
    return winner(tally((answer, 1.0) for answer in record["answers"]))


@register_selection("best_scored_last")
def best_scored_last(record: IterationRecord, totals: Mapping[str, float]) -> str | None:
    """The answer of the last iteration's candidate with the highest mean verification score
    (first such candidate on a tie; unscored candidates only when none is scored).

    Example:
        >>> best_scored_last({"answers": ["3", "4", None], "scores": [0.5, 0.9, 1.0]}, {})
        '4'
    """
    pairs = [(a, s) for a, s in zip(record["answers"], record["scores"], strict=True) if a]
    if not pairs:
        return None
    scored = [pair for pair in pairs if pair[1] is not None]
    if not scored:
        return pairs[0][0]
    return max(scored, key=lambda pair: pair[1])[0]  # type: ignore[arg-type,return-value]
