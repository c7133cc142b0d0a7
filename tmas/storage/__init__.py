"""Where runs are saved: a SQLite file (one machine) or a PostgreSQL database (many processes on
many machines). Either way a run's checkpoints, its registry row and (for topologies that need
one) its shared store live together, opened with :func:`open_storage`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from tmas.storage.checkpoint_reader import SqliteCheckpointReader
from tmas.storage.handle import Storage, redact
from tmas.storage.run_registry import RunRegistry, Upgrade
from tmas.storage.sqlite import (
    StorageError,
    check_writable,
    connect,
    default_db_path,
    open_store,
)
from tmas.storage.store_reader import SqliteStoreReader

DATABASE_SCHEMES = ("postgresql", "postgres")


def is_database_url(target: str | Path | None) -> bool:
    """True when ``target`` names a PostgreSQL database rather than a SQLite file.

    Example:
        >>> is_database_url("postgresql://tmas@db/runs"), is_database_url("runs.sqlite")
        (True, False)
    """
    return isinstance(target, str) and target.split("://", 1)[0] in DATABASE_SCHEMES


def sqlite_storage(
    conn: sqlite3.Connection, location: str = "", upgrade: Upgrade | None = None
) -> Storage:
    """Storage on an open SQLite connection (see :func:`tmas.storage.sqlite.connect`); runs
    saved before plans are given theirs with ``upgrade`` (:class:`RunRegistry`)."""

    def saver() -> Any:
        from tmas.storage.checkpointer import open_checkpointer  # loads LangGraph

        return open_checkpointer(conn)

    def reader(storage: Storage) -> SqliteCheckpointReader:
        return SqliteCheckpointReader(conn, saver=lambda: storage.checkpointer)

    return Storage(
        location=location,
        _open_checkpointer=saver,
        registry=RunRegistry(conn, upgrade),
        _open_store=lambda: open_store(conn),
        _close=conn.close,
        _open_reader=reader,
        _open_store_reader=lambda: SqliteStoreReader(conn),
    )


def open_storage(
    target: str | Path | None = None, *, for_writing: bool = False, upgrade: Upgrade | None = None
) -> Storage:
    """Open (creating it if needed) the run database at ``target``: a SQLite path, or a
    ``postgresql://`` URL; None means ``$TMAS_HOME/runs.sqlite``. StorageError when it cannot,
    or (``for_writing``) when another process keeps a SQLite file's write lock too long (a
    database opened for writing has its checkpoint tables made at once; one only read loads
    no LangGraph, see :class:`Storage`). Runs
    saved before runs kept plans are given theirs with ``upgrade`` (:class:`RunRegistry`; the
    package's own is :func:`tmas.lifecycle.run_database.open_runs`).

    Example:
        >>> import tempfile, os
        >>> storage = open_storage(os.path.join(tempfile.mkdtemp(), "runs.sqlite"))
        >>> storage.registry.all()
        []
        >>> storage.close()
    """
    if is_database_url(target):
        from tmas.storage.postgres import postgres_storage

        return postgres_storage(str(target), upgrade)
    path = Path(target) if target is not None else default_db_path()
    conn = connect(path)
    try:
        if for_writing:
            check_writable(conn, path)
        storage = sqlite_storage(conn, str(path), upgrade)
        if for_writing:  # the checkpoint tables exist before anything writes a run
            storage.checkpointer  # noqa: B018 - opening it creates them
        return storage
    except StorageError:
        conn.close()
        raise


def as_storage(target: Storage | sqlite3.Connection | Any) -> Storage:
    """``target`` itself when it is a Storage; a SQLite connection is wrapped in one."""
    if isinstance(target, Storage):
        return target
    if isinstance(target, sqlite3.Connection):
        return sqlite_storage(target)
    raise TypeError(f"expected Storage or sqlite3.Connection, got {type(target).__name__}")


__all__ = [
    "Storage",
    "StorageError",
    "as_storage",
    "is_database_url",
    "open_storage",
    "redact",
    "sqlite_storage",
]
