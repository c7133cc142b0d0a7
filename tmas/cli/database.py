"""Opening the run database for a command: the run manager, closed when the command ends, and
the checks a command makes before it writes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tmas.cli.common import fail, notice
from tmas.graphs.run_plan import saved_plan
from tmas.lifecycle.run_database import open_runs
from tmas.storage import is_database_url
from tmas.storage.run_registry import RunRecord
from tmas.storage.sqlite import StorageError, default_db_path, describe_database_error

if TYPE_CHECKING:
    from tmas.graphs.run_plan import RunPlan
    from tmas.lifecycle.manager import RunManager
    from tmas.llm.router import ModelRouter
    from tmas.storage import Storage


def models_once_they_answer(plan: RunPlan) -> ModelRouter:
    """A run's models, made once their servers answer (:func:`tmas.cli.endpoints.checked_router`;
    the model stack loads only for a command that calls a model)."""
    from tmas.cli.endpoints import checked_router

    return checked_router(plan)


@contextmanager
def open_database(
    db: str | None, *, create: bool = True, for_writing: bool = False
) -> Iterator[Storage]:
    """The run database at ``db`` for the body of a command, closed when the body ends.

    Commands that only read refuse a SQLite file that is missing, commands that start runs
    (``for_writing``) refuse one another process keeps locked. A database that fails inside
    the body (damaged pages, a lock held too long, a refused checkpoint) is an error message
    and a non-zero exit. Reading it does not load the engine (see :class:`Storage`).

    Example:
        >>> import tempfile, os
        >>> with open_database(os.path.join(tempfile.mkdtemp(), "runs.sqlite")) as storage:
        ...     storage.registry.all()
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
        yield storage
    except sqlite3.DatabaseError as exc:
        fail(describe_database_error(exc, storage.location), 1)
    except StorageError as exc:
        fail(str(exc), 1)
    finally:
        storage.close()


@contextmanager
def open_manager(
    db: str | None,
    *,
    create: bool = True,
    for_writing: bool = False,
    router_factory: Any = None,
) -> Iterator[RunManager]:
    """The run manager on :func:`open_database`'s storage, for commands that run, resume or
    fork. Models come from ``router_factory`` (by default :func:`models_once_they_answer`).

    Example:
        >>> import tempfile, os
        >>> with open_manager(os.path.join(tempfile.mkdtemp(), "runs.sqlite")) as manager:
        ...     manager.registry.all()
        []
    """
    from tmas.lifecycle.manager import RunManager  # the engine: loaded by commands that run

    with open_database(db, create=create, for_writing=for_writing) as storage:
        factory = router_factory or models_once_they_answer
        yield RunManager(storage, router_factory=factory, on_notice=notice)


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
