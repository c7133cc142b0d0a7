"""Groups of command-line options: a frozen dataclass whose fields declare their options once,
and a decorator that gives a command those options and hands it one object of the group.

A field declares its option with :func:`option`: the default and the ``typer.Option``
settings (help, envvar, min, max); the field's type is the type the command line parses (a
``tuple[str, ...]`` field is a repeatable option). :func:`option_group` puts the group's
options (all, or the ones named) in the place of one parameter of the command, so Typer
lists them as the command's own, and calls the command with the object they make.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from copy import copy
from dataclasses import field, fields
from typing import Annotated, Any, TypeVar, get_args, get_origin, get_type_hints

import typer

OPTION = "tmas.cli.option"  # the key of a field's OptionInfo in its metadata
GROUPS = "option_groups"  # the attribute listing a decorated command's groups
Command = TypeVar("Command", bound=Callable[..., Any])


def option(default: Any, *names: str, **settings: Any) -> Any:
    """A field of an option group with the one declaration of its command-line option: its
    ``names`` (default: ``--FIELD``), default and ``typer.Option`` settings.

    Example:
        >>> option(4096, min=512).metadata[OPTION].min
        512
    """
    return field(default=default, metadata={OPTION: typer.Option(*names, **settings)})


def parsed_type(hint: Any) -> Any:
    """The type Typer parses for a field of this type (a tuple is a repeatable option).

    Example:
        >>> parsed_type(tuple[str, ...]), parsed_type(int | None)
        (list[str], int | None)
    """
    return list[get_args(hint)[0]] if get_origin(hint) is tuple else hint


def group_parameters(
    group: type,
    names: Iterable[str] = (),
    prefix: str = "",
    changes: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, inspect.Parameter]:
    """The command parameters of a group's options (field name -> parameter), in the order
    of its fields: all of them, or those ``names``. ``changes`` are settings that differ for
    one command (``default``, ``help``, ``envvar``, ...); with a ``prefix`` the options are
    ``--PREFIX-NAME`` and read no environment variable unless ``changes`` give one.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Speed:
        ...     steps: int = option(8, min=1, help="steps per run")
        >>> parameter = group_parameters(Speed, prefix="warmup", changes={"steps": {"default": 2}})
        >>> parameter["steps"].name, parameter["steps"].default
        ('warmup_steps', 2)
    """
    declared = {f.name: f for f in fields(group)}
    chosen = set(names) or set(declared)
    changes = changes or {}
    if unknown := sorted((chosen | set(changes)) - declared.keys()):
        raise TypeError(f"{group.__name__} has no option {unknown}")
    if untaken := sorted(set(changes) - chosen):
        raise TypeError(f"changes to options the command does not take: {untaken}")
    hints = get_type_hints(group)
    parameters = {}
    for name in (n for n in declared if n in chosen):
        settings = dict(changes.get(name, {}))
        default = settings.pop("default", declared[name].default)
        info = copy(declared[name].metadata[OPTION])
        if prefix:
            info.envvar = None
        for key, value in settings.items():
            if not hasattr(info, key):
                raise TypeError(f"typer.Option has no setting {key!r}")
            setattr(info, key, value)
        parameters[name] = inspect.Parameter(
            f"{prefix}_{name}" if prefix else name,
            inspect.Parameter.KEYWORD_ONLY,
            default=list(default) if isinstance(default, tuple) else default,
            annotation=Annotated[parsed_type(hints[name]), info],
        )
    return parameters


def option_group(
    group: type,
    names: Iterable[str] = (),
    *,
    into: str,
    prefix: str = "",
    changes: Mapping[str, Mapping[str, Any]] | None = None,
) -> Callable[[Command], Command]:
    """A decorator that replaces the command's parameter ``into`` by the group's options
    (:func:`group_parameters`) and calls the command with the object they make.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Greeting:
        ...     name: str = option("world", help="who is greeted")
        ...     extra: tuple[str, ...] = option((), help="more names (repeatable)")
        >>> @option_group(Greeting, into="greeting")
        ... def hello(*, greeting: Greeting, loud: bool = False) -> Greeting:
        ...     return greeting
        >>> list(inspect.signature(hello).parameters)
        ['name', 'extra', 'loud']
        >>> hello(name="you", extra=["me"])
        Greeting(name='you', extra=('me',))
    """
    options = group_parameters(group, names, prefix, changes)

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        before = list(signature.parameters.values())
        at = next((i for i, p in enumerate(before) if p.name == into), None)
        if at is None:
            raise TypeError(f"{command.__name__} has no parameter {into!r} for {group.__name__}")
        added = [p.replace(kind=before[at].kind) for p in options.values()]
        changed = signature.replace(parameters=[*before[:at], *added, *before[at + 1 :]])

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            bound = changed.bind(*args, **kwargs)
            bound.apply_defaults()
            given = bound.arguments
            values = {name: given.pop(p.name) for name, p in zip(options, added, strict=True)}
            made = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
            return command(**given, **{into: group(**made)})

        run.__signature__ = changed  # type: ignore[attr-defined]
        run.__annotations__ = {
            p.name: p.annotation for p in changed.parameters.values() if p.annotation is not p.empty
        }
        found = {**getattr(command, GROUPS, {}), into: (group, tuple(p.name for p in added))}
        setattr(run, GROUPS, found)
        return run  # type: ignore[return-value]

    return decorate
