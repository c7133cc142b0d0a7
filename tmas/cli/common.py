"""What the command-line modules share: consoles, common options, failing with a message.
Opening the run database is :mod:`tmas.cli.database`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from tmas.graphs.spec import SpecError
from tmas.terminal import plain

out = Console()
err = Console(stderr=True)

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="TMAS_DB",
        help="run database: SQLite path or postgresql:// URL ($TMAS_HOME/runs.sqlite)",
    ),
]
ConcurrencyOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="parallel LLM calls at most (default: what the backend batches, docs/concurrency.md)",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
StreamOption = Annotated[
    bool, typer.Option("--stream", help="print each candidate, verdict and bank item live")
]
ReviewOption = Annotated[
    bool, typer.Option("--review", help="pause after each iteration to inspect or edit banks")
]

PLUGIN_HELP = "a module name or a .py file that registers node types, roles, prompts"
MEMORY_HELP = (
    "a lifelong memory: items from earlier problems seed the banks, this run's well-verified "
    "items are kept (docs/memory.md)"
)
SET_HELP = "KEY=VALUE for any config field (repeatable)"
PluginOption = Annotated[list[str], typer.Option(help=PLUGIN_HELP)]
MemoryOption = Annotated[str | None, typer.Option(help=MEMORY_HELP)]
SetOption = Annotated[list[str], typer.Option("--set", help=SET_HELP)]


def fail(message: str, code: int = 2) -> None:
    """Print an error (each line made safe for the terminal) and exit non-zero."""
    text = "\n".join(plain(line) for line in message.splitlines())
    err.print(f"[red]error:[/] {escape(text)}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def error_line(exc: BaseException) -> str:
    """An error as one line; an invalid topology lists its problems separated by ``;``.

    Example:
        >>> error_line(SpecError(["node a: unknown type 'x'", "edge a -> b:\\n dangling"], "t"))
        "invalid topology t: node a: unknown type 'x'; edge a -> b: dangling"
    """
    if isinstance(exc, SpecError):
        head = str(exc).split("\n", 1)[0]
        return f"{head} " + "; ".join(" ".join(problem.split()) for problem in exc.problems)
    return " ".join(str(exc).split())


def notice(message: str) -> None:
    """Tell the user something they should know before a run goes on (on stderr)."""
    err.print(f"note: {plain(message)}", markup=False, highlight=False, soft_wrap=True)
