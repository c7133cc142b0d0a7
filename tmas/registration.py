"""Registering pluggable pieces (node types, planners, selection rules...) in name-keyed tables,
and checking the keyword parameters a spec gives them against their signatures."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model


def register_in(table: dict[str, Any], kind: str, name: str) -> Callable[[Any], Any]:
    """A decorator that files its argument in ``table`` under ``name``; registering another
    item under a taken name is refused (the same item again is fine).

    Example:
        >>> table = {}
        >>> register_in(table, "widget", "w")(len) is len and table == {"w": len}
        True
        >>> register_in(table, "widget", "w")(str)
        Traceback (most recent call last):
        ...
        ValueError: widget 'w' is already registered
    """

    def decorate(item: Any) -> Any:
        if name in table and table[name] is not item:
            raise ValueError(f"{kind} {name!r} is already registered")
        table[name] = item
        return item

    return decorate


def lookup(table: Mapping[str, Any], kind: str, name: str) -> Any:
    """The item ``table`` holds under ``name``; ValueError naming the known ones otherwise.

    Example:
        >>> lookup({"a": 1, "b": 2}, "widget", "c")
        Traceback (most recent call last):
        ...
        ValueError: unknown widget 'c'; known: a, b
    """
    if name not in table:
        raise ValueError(f"unknown {kind} {name!r}; known: {', '.join(sorted(table))}")
    return table[name]


_VARIADIC = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)


def with_defaults(function: Callable[..., Any], params: Mapping[str, Any], skip: int = 1):
    """``params`` completed with the defaults of ``function``'s keyword parameters after the
    first ``skip`` (what a node factory will be called with).

    Example:
        >>> def factory(ctx, agent: str, steps: int = 8):
        ...     pass
        >>> with_defaults(factory, {"agent": "critic"})
        {'steps': 8, 'agent': 'critic'}
    """
    parameters = list(inspect.signature(function).parameters.values())[skip:]
    defaults = {
        p.name: p.default
        for p in parameters
        if p.kind not in _VARIADIC and p.default is not inspect.Parameter.empty
    }
    return {**defaults, **params}


@lru_cache(maxsize=512)
def _keyword_model(function: Callable[..., Any], skip: int) -> tuple[type[BaseModel], bool]:
    """A pydantic model of ``function``'s parameters after the first ``skip`` (annotated types,
    defaults), and whether it also takes ``**kwargs``."""
    parameters = list(inspect.signature(function).parameters.values())[skip:]
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception:  # noqa: BLE001 - unresolvable annotations: check names only
        hints = {}
    fields: dict[str, Any] = {}
    for position, parameter in enumerate(parameters):
        if parameter.kind in _VARIADIC:
            continue
        default = ... if parameter.default is parameter.empty else parameter.default
        # a neutral field name, the parameter's own as alias: names such as "schema" or
        # "_private" mean something to pydantic
        fields[f"p{position}"] = (
            hints.get(parameter.name, Any),
            Field(default, alias=parameter.name),
        )
    name = f"{getattr(function, '__name__', 'function')}_parameters"
    config = ConfigDict(extra="allow", strict=True, populate_by_name=False)
    model = create_model(name, __config__=config, **fields)  # type: ignore[call-overload]
    return model, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def keyword_problems(
    function: Callable[..., Any], values: Mapping[str, Any], *, skip: int = 1, what: str = ""
) -> list[str]:
    """What is wrong with calling ``function`` with ``values`` as keyword arguments after its
    first ``skip`` parameters: names it does not take (unless it takes ``**kwargs``), values
    of the wrong annotated type (strictly: ``"3"`` is no integer; an integer is a float),
    missing required ones.

    Example:
        >>> def factory(ctx, steps: int = 2, name: str = "x"):
        ...     pass
        >>> for problem in keyword_problems(factory, {"steps": "many", "colour": 1}):
        ...     print(problem)
        'colour' is not taken (it takes: steps, name)
        'steps': Input should be a valid integer
    """
    model, open_ended = _keyword_model(function, skip)
    prefix = f"{what} " if what else ""
    problems = []
    named = [field.alias for field in model.model_fields.values()]
    if not open_ended:
        taken = ", ".join(named) or "none"  # type: ignore[arg-type]
        problems += [
            f"{prefix}{name!r} is not taken (it takes: {taken})"
            for name in values
            if name not in named
        ]
    try:
        model.model_validate(dict(values))
    except ValidationError as exc:
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"])
            problems.append(f"{prefix}{where!r}: {err['msg']}")
    return problems
