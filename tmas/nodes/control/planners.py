"""Planners: how each candidate of a later iteration is made, registered by name.

A planner decides, for one candidate of iteration 2 or later, its *mode* (which solver prompt
``solver/<mode>`` it gets) and which rollouts of the previous iteration it reads: a parent to
repair, or references. The bundled topologies name theirs in ``start_iteration``'s
``planner`` parameter; a plugin adds its own::

    from tmas.nodes.control.planners import PlanChoice, register_planner

    @register_planner("repair_best")
    def repair_best(request):
        return PlanChoice("exploit", parent_index=request.previous[0])

Options a planner takes as keyword arguments are given beside ``planner`` in the spec
(``params: {planner: aggregate, aggregate_k: 3}``) and checked against its signature before
anything runs. A planner that makes modes of its own declares them (``modes=("hint",)``):
the topology must then have a ``solver/hint`` prompt (a plugin's ``register_prompts`` or the
spec's ``prompts:`` block).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import AfterValidator

from tmas.config import TMASConfig
from tmas.nodes.parameters import keyword_problems
from tmas.registration import declare, owner_of, registry
from tmas.seeding import derive_seed, draw_uniform

BUILTIN_MODES = ("initial", "exploit", "explore", "reference", "aggregate", "experience")


@dataclass(frozen=True)
class PlanRequest:
    """What a planner is asked about: candidate ``index`` of ``iteration`` (2 or later), with
    ``previous`` the candidate indices of the previous iteration's rollouts (failed calls left
    none; the list may be empty when every call failed) and ``rollouts`` their compact records
    (``index``, ``answer``, ``mean_score``, ``summary``, the end of their ``text``);
    ``channels`` holds the run's declared state channels by name, as the previous iteration
    left them (:mod:`tmas.nodes.channels`)."""

    config: TMASConfig
    iteration: int
    index: int
    previous: list[int]
    rollouts: list[dict[str, Any]] = field(default_factory=list)
    channels: Mapping[str, Any] = field(default_factory=dict)

    def rng(self, tag: str) -> random.Random:
        """A random generator seeded by (seed, tag, iteration, index): the same on resume.

        Example:
            >>> request = PlanRequest(TMASConfig(), 2, 0, [0, 1])
            >>> request.rng("x").random() == request.rng("x").random()
            True
        """
        return random.Random(derive_seed(self.config.seed, tag, self.iteration, self.index))


@dataclass(frozen=True)
class PlanChoice:
    """A planner's answer: the candidate's mode, the rollout it repairs (``parent_index``) and
    the rollouts it reads as references, all by candidate index."""

    mode: str
    parent_index: int | None = None
    references: list[int] = field(default_factory=list)


Planner = Callable[..., PlanChoice]


@dataclass(frozen=True)
class PlannerEntry:
    """A registered planner and the modes of its own it may choose."""

    plan: Planner
    modes: tuple[str, ...] = ()


def register_planner(name: str, *, modes: tuple[str, ...] = ()) -> Callable[[Planner], Planner]:
    """Register ``planner(request: PlanRequest, **options) -> PlanChoice`` as ``name`` (in
    :func:`tmas.registration.registry`).

    Example:
        >>> @register_planner("doc_example_fresh")
        ... def fresh(request):
        ...     return PlanChoice("initial")
        >>> "doc_example_fresh" in registry().planners
        True
    """

    def decorate(planner: Planner) -> Planner:
        declare("planners", name, PlannerEntry(planner, tuple(modes)), owner_of(planner))
        return planner

    return decorate


def planner_entry(name: str) -> PlannerEntry:
    """The planner registered as ``name``; ValueError naming the known ones otherwise.

    Example:
        >>> planner_entry("aggregate").plan.__name__
        'aggregate'
    """
    return registry().planners[name]  # type: ignore[no-any-return]


def known_planner(name: str) -> str:
    """``name`` when a planner is registered under it; ValueError naming the known ones.

    Example:
        >>> known_planner("refine")
        'refine'
        >>> known_planner("no_such_planner")
        Traceback (most recent call last):
        ...
        tmas.registration.UnknownName: unknown planner 'no_such_planner'; known: aggregate, ...
    """
    planner_entry(name)
    return name


PlannerName = Annotated[str, AfterValidator(known_planner)]
"""A node parameter naming a registered planner (checked with the spec)."""


def option_problems(name: str, options: Mapping[str, Any]) -> list[str]:
    """What is wrong with the ``options`` given to planner ``name``: names its signature does
    not take, values of the wrong annotated type.

    Example:
        >>> option_problems("aggregate", {"aggregate_k": 3}), option_problems("refine", {"k": 1})
        ([], ["planner 'refine': option 'k' is not taken (it takes: none)"])
    """
    found = keyword_problems(planner_entry(name).plan, options, what="option")
    return [f"planner {name!r}: {problem}" for problem in found]


def parent_of(index: int, previous: list[int]) -> int:
    """The earlier candidate that candidate ``index`` repairs: the one with the same index
    when it has a rollout, else one of the rollouts in turn.

    Example:
        >>> parent_of(1, [0, 1, 2]), parent_of(1, [0, 2]), parent_of(3, [0, 2])
        (1, 2, 2)
    """
    return index if index in previous else previous[index % len(previous)]


def choose_mode(config: TMASConfig, iteration: int, index: int) -> str:
    """Epsilon-greedy choice for one candidate, seeded by (seed, iteration, index).

    Example:
        >>> choose_mode(TMASConfig(epsilon=1.0), 2, 0), choose_mode(TMASConfig(), 1, 0)
        ('explore', 'initial')
    """
    if iteration == 1:
        return "initial"
    explore = draw_uniform(config.seed, "mode", iteration, index) < config.epsilon
    return "explore" if explore else "exploit"


@register_planner("epsilon_greedy")
def epsilon_greedy(request: PlanRequest) -> PlanChoice:
    """TMAS: exploit (repair the own rollout) or, with probability epsilon, explore; explore
    when no rollout of the previous iteration survived."""
    if not request.previous:
        return PlanChoice("explore")
    mode = choose_mode(request.config, request.iteration, request.index)
    parent = parent_of(request.index, request.previous) if mode == "exploit" else None
    return PlanChoice(mode, parent_index=parent)


@register_planner("initial")
def initial(request: PlanRequest) -> PlanChoice:
    """Fresh samples every iteration (majority vote)."""
    return PlanChoice("initial")


@register_planner("refine")
def refine(request: PlanRequest) -> PlanChoice:
    """Each candidate repairs its own rollout (self-refine, verify-refine)."""
    if not request.previous:
        return PlanChoice("initial")
    return PlanChoice("exploit", parent_index=parent_of(request.index, request.previous))


@register_planner("references")
def references(request: PlanRequest) -> PlanChoice:
    """Every candidate reads the whole previous round as references (PaCoRe)."""
    if not request.previous:
        return PlanChoice("initial")
    return PlanChoice("reference", references=list(request.previous))


@register_planner("aggregate")
def aggregate(request: PlanRequest, aggregate_k: int = 2) -> PlanChoice:
    """Each new member aggregates ``aggregate_k`` random members of the previous population
    (RSA)."""
    if not request.previous:
        return PlanChoice("initial")
    picked = request.rng("aggregate").sample(
        request.previous, min(aggregate_k, len(request.previous))
    )
    return PlanChoice("aggregate", references=sorted(picked))


@register_planner("experience")
def experience(request: PlanRequest) -> PlanChoice:
    """Each new attempt reads the experience bank (RSE)."""
    if not request.previous:
        return PlanChoice("initial")
    return PlanChoice("experience")
