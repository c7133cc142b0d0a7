"""Selection rules: how a topology turns its iterations' answers into the run's final answer.

A rule reads the record of the iteration that just ended (its answers and verification scores)
and the running verification-weighted vote over every iteration so far, and names the answer.
Each bundled topology declares the rule its method uses (``record_iteration``'s ``selection``
parameter); ``--set selection=NAME`` overrides it. Register your own with
``register_selection`` (exported by ``tmas.plugin``)::

    @register_selection("first_answer")
    def first_answer(request):
        return next((a for a in request.record["answers"] if a is not None), None)

A rule takes one :class:`SelectionRequest`: the record, the running totals and the run's
declared state channels (:mod:`tmas.nodes.channels`) by name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import AfterValidator

from tmas.config import TMASConfig
from tmas.nodes.control.voting import tally, winner
from tmas.registration import declare, owner_of, registry
from tmas.state import IterationRecord


@dataclass(frozen=True)
class SelectionRequest:
    """What a selection rule is asked: ``record``, the record of the iteration that just ended
    (its ``answers``, ``vote``, ``scores``), ``totals``, the verification-weighted vote over
    every iteration so far, and ``channels``, the run's declared state channels by name."""

    record: IterationRecord
    totals: Mapping[str, float]
    channels: Mapping[str, Any] = field(default_factory=dict)


SelectionRule = Callable[[SelectionRequest], str | None]

DEFAULT_SELECTION = "vote_all"


def register_selection(name: str) -> Callable[[Callable[..., str | None]], Any]:
    """Register ``rule(request: SelectionRequest) -> answer or None`` as the selection rule
    ``name`` (in :func:`tmas.registration.registry`). A rule written before requests,
    ``rule(record, totals)`` (or with a ``channels`` keyword), is adapted once, here.

    Example:
        >>> @register_selection("doc_example_first")
        ... def first(request):
        ...     return request.record["answers"][0]
        >>> selection_rule("doc_example_first")(SelectionRequest({"answers": ["3"]}, {}))
        '3'
    """

    def decorate(rule: Callable[..., str | None]) -> Any:
        declare("selections", name, as_request_rule(rule), owner_of(rule))
        return rule

    return decorate


def as_request_rule(rule: Callable[..., str | None]) -> SelectionRule:
    """``rule`` as a rule of one :class:`SelectionRequest`: as it is when it takes one
    argument; a rule of ``(record, totals)`` (and perhaps ``channels=``) adapted.

    Example:
        >>> def older(record, totals, channels):
        ...     return channels["pick"]
        >>> as_request_rule(older)(SelectionRequest({}, {}, {"pick": "7"}))
        '7'
    """
    parameters = inspect.signature(rule).parameters
    if len(parameters) <= 1:
        return rule
    takes_channels = "channels" in parameters

    def adapted(request: SelectionRequest) -> str | None:
        extra = {"channels": request.channels} if takes_channels else {}
        return rule(request.record, request.totals, **extra)

    for attribute in ("__doc__", "__name__", "__qualname__", "__module__"):
        if hasattr(rule, attribute):
            setattr(adapted, attribute, getattr(rule, attribute))
    return adapted


def selection_rule(name: str) -> SelectionRule:
    """The rule registered as ``name``; ValueError naming the known rules otherwise.

    Example:
        >>> selection_rule("no_such_rule")
        Traceback (most recent call last):
        ...
        tmas.registration.UnknownName: unknown selection rule 'no_such_rule'; known: ...
    """
    return registry().selections[name]  # type: ignore[no-any-return]


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
    rule = registry().selections.get(name)
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
def vote_all(request: SelectionRequest) -> str | None:
    """The verification-weighted vote over every iteration so far (TMAS).

    Example:
        >>> vote_all(SelectionRequest({"vote": {"3": 1.0}}, {"3": 1.0, "4": 2.5}))
        '4'
    """
    return winner(dict(request.totals))


@register_selection("vote_last")
def vote_last(request: SelectionRequest) -> str | None:
    """The verification-weighted vote over the last iteration only.

    Example:
        >>> vote_last(SelectionRequest({"vote": {"3": 1.0}}, {"3": 1.0, "4": 2.5}))
        '3'
    """
    return winner(request.record["vote"])


@register_selection("majority_last")
def majority_last(request: SelectionRequest) -> str | None:
    """The most frequent answer of the last iteration, unweighted: the method's own output for
    PaCoRe (its single last-round sample), RSA (its final population) and self-refine or
    verify-refine (the last refinements). Failed calls and unreadable answers do not vote.

    Example:
        >>> majority_last(SelectionRequest({"answers": ["4", None, "3", "4.0"]}, {}))
        '4'
    """
    return winner(tally((answer, 1.0) for answer in request.record["answers"]))


@register_selection("best_scored_last")
def best_scored_last(request: SelectionRequest) -> str | None:
    """The answer of the last iteration's candidate with the highest mean verification score
    (first such candidate on a tie; unscored candidates only when none is scored).

    Example:
        >>> best_scored_last(SelectionRequest({"answers": ["3", "4", None],
        ...                                    "scores": [0.5, 0.9, 1.0]}, {}))
        '4'
    """
    record = request.record
    pairs = [(a, s) for a, s in zip(record["answers"], record["scores"], strict=True) if a]
    if not pairs:
        return None
    scored = [pair for pair in pairs if pair[1] is not None]
    if not scored:
        return pairs[0][0]
    return max(scored, key=lambda pair: pair[1])[0]  # type: ignore[arg-type,return-value]
