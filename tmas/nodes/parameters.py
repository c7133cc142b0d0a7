"""Checking the keyword parameters a spec gives a registered piece (a node type's ``params``,
a planner's options) against its signature: names it takes, annotated types, required ones,
and the values it will be called with."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

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
