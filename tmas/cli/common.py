"""What the command-line modules share: consoles, common options, failing with a message,
opening the run database."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from tmas.cli.endpoints import checked_router
from tmas.graphs.run_plan import saved_plan
from tmas.graphs.spec import SpecError
from tmas.lifecycle.manager import RunManager
from tmas.lifecycle.run_database import open_runs
from tmas.storage import is_database_url
from tmas.storage.run_registry import RunRecord
from tmas.storage.sqlite import StorageError, default_db_path, describe_database_error
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


@contextmanager
def open_manager(
    db: str | None,
    *,
    create: bool = True,
    for_writing: bool = False,
    router_factory: Any = checked_router,
) -> Iterator[RunManager]:
    """The run manager on ``db`` for the body of a command, closed when the body ends.

    Commands that only read refuse a SQLite file that is missing, commands that start runs
    (``for_writing``) refuse one another process keeps locked. A database that fails inside
    the body (damaged pages, a lock held too long, a refused checkpoint) is an error message
    and a non-zero exit. Models come from ``router_factory`` (by default only once their
    servers answer).

    Example:
        >>> import tempfile, os
        >>> with open_manager(os.path.join(tempfile.mkdtemp(), "runs.sqlite")) as manager:
        ...     manager.registry.all()
        []
    """
    target = db if is_database_url(db) else Path(db or default_db_path())
    if not create and isinstance(target, Path) and not target.exists():
        fail(f"no run database at {target}")
    try:
        storage = open_runs(target, for_writing=for_writing)
    except StorageError as exc:
        fail(str(exc))
        raise  # unreachable
    try:
        yield RunManager(storage, router_factory=router_factory, on_notice=notice)
    except sqlite3.DatabaseError as exc:
        fail(describe_database_error(exc, storage.location), 1)
    except StorageError as exc:
        fail(str(exc), 1)
    finally:
        storage.close()


def notice(message: str) -> None:
    """Tell the user something they should know before a run goes on (on stderr)."""
    err.print(f"note: {plain(message)}", markup=False, highlight=False, soft_wrap=True)


def check_database(db: str | None) -> None:
    """Fail unless the run database at ``db`` can be opened for new runs.

    Example:
        >>> import tempfile, os
        >>> check_database(os.path.join(tempfile.mkdtemp(), "runs.sqlite"))
    """
    with open_manager(db, for_writing=True):
        pass


def require_rebuildable(record: RunRecord, python_call: str, also: str = "") -> None:
    """Fail (exit 2, nothing changed) for a run whose models were passed from Python: the
    command line cannot rebuild them from its saved settings. ``python_call`` is the Python
    call that continues it; ``also`` another way, if the command has one."""
    backend = saved_plan(record).backend
    if backend.kind == "custom":
        fail(
            f"run {record.run_id} was made with chat models passed from Python "
            f"({backend.model}); the command line cannot rebuild them. Continue "
            f"it from Python with the same models: {python_call}{also}"
        )
