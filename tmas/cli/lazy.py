"""A command group that imports a command's module only when that command runs.

``tmas --help`` lists every command from a table of names and one-line summaries, without
importing LangGraph, LangChain, NumPy or a backend; ``tmas solve ...`` imports the solve
command alone (and what it needs). Each entry names the module and the attribute that
defines the command: a function (one command) or a ``typer.Typer`` (a group of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import get_close_matches
from importlib import import_module

import typer
from typer.core import TyperCommand, TyperGroup

try:  # Typer's own copy of click, where it has one (its commands and errors are of that copy)
    from typer._click import Command, Context  # type: ignore[attr-defined]
    from typer._click.exceptions import UsageError  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - a Typer that uses click itself
    from click import Command, Context, UsageError  # type: ignore[assignment]


@dataclass(frozen=True)
class LazyCommand:
    """Where command ``name`` lives, the one line ``tmas --help`` shows for it, and whether it
    runs graphs (``engine``: LangGraph and the model stack are loaded before it starts; a
    command that only looks at runs or topologies loads neither)."""

    name: str
    module: str
    attr: str
    summary: str
    engine: bool = True


def load_command(entry: LazyCommand) -> Command:
    """The click command of ``entry``, importing its module.

    Example:
        >>> load_command(LazyCommand("graphs", "tmas.cli.graphs", "graphs", "")).name
        'graphs'
    """
    target = getattr(import_module(entry.module), entry.attr)
    if isinstance(target, typer.Typer):
        command: Command = typer.main.get_group(target)
    else:
        single = typer.Typer()
        single.command(entry.name)(target)
        command = typer.main.get_command(single)
    command.name = entry.name
    return command


class LazyCommands(TyperGroup):
    """A Typer group over ``ENTRIES`` (set by a subclass): listing shows the summaries, and
    resolving a command to run imports it."""

    ENTRIES: tuple[LazyCommand, ...] = ()

    def _entry(self, name: str) -> LazyCommand | None:
        return next((e for e in self.ENTRIES if e.name == name), None)

    def list_commands(self, ctx: Context) -> list[str]:
        names = [e.name for e in self.ENTRIES]
        return [*names, *(n for n in super().list_commands(ctx) if n not in names)]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        """A stand-in carrying the summary (enough for the listing); the real command comes
        from :meth:`load`."""
        entry = self._entry(cmd_name)
        if entry is None:
            return super().get_command(ctx, cmd_name)
        return TyperCommand(entry.name, help=entry.summary, short_help=entry.summary)

    def load(self, name: str) -> Command:
        """The real command ``name`` (imported on first use).

        Example:
            >>> from tmas.cli.app import app
            >>> typer.main.get_command(app).load("runs").params[0].name
            'db'
        """
        entry = self._entry(name)
        if entry is None:
            raise UsageError(f"No such command {name!r}.")
        if name not in self.commands:
            self.commands[name] = load_command(entry)
        return self.commands[name]

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        try:
            name, command, rest = super().resolve_command(ctx, args)
        except UsageError as exc:
            if args and "Did you mean" not in exc.message:
                if matches := get_close_matches(args[0], self.list_commands(ctx)):
                    exc.message = f"{exc.message.rstrip('.')}. Did you mean {matches[0]!r}?"
            raise
        if name is not None and self._entry(name) is not None:
            command = self.load(name)
        return name, command, rest
