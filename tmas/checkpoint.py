"""The SQLite checkpointer every run is saved in, with a strict (pickle-free) serializer."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.sqlite import SqliteStore


class StorageError(RuntimeError):
    """The run database cannot be opened or read."""


def default_db_path() -> Path:
    """Where runs are saved unless ``--db`` says otherwise: ``$TMAS_HOME/runs.sqlite``.

    ``TMAS_HOME`` defaults to ``~/.local/share/tmas``.

    Example:
        >>> default_db_path().name
        'runs.sqlite'
    """
    home = os.environ.get("TMAS_HOME") or Path.home() / ".local" / "share" / "tmas"
    return Path(home) / "runs.sqlite"


def strict_serializer() -> JsonPlusSerializer:
    """A serializer that never unpickles and decodes only msgpack's safe built-in types."""
    return JsonPlusSerializer(pickle_fallback=False, allowed_msgpack_modules=None)


WAL_ATTEMPTS = 200


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL; the switch needs a moment alone with a new file, so processes opening it
    at the same time wait their turn (SQLite answers "locked" at once here, without waiting)."""
    for attempt in range(WAL_ATTEMPTS):
        try:
            conn.execute("pragma journal_mode=wal")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == WAL_ATTEMPTS - 1:
                raise
            time.sleep(0.05)


def connect(path: Path | str, *, autocommit: bool = False) -> sqlite3.Connection:
    """Open (creating it if needed) the run database with WAL and a busy timeout
    (``autocommit``: no implicit transactions, as LangGraph's SQLite store expects).

    Commits are not synced to disk one by one (``synchronous=normal``, WAL): a killed process
    loses nothing it committed, and the file is never corrupted; only a power loss or OS
    crash can drop the last few commits.

    Example:
        >>> import tempfile, os
        >>> conn = connect(os.path.join(tempfile.mkdtemp(), "r.sqlite"))
        >>> conn.execute("pragma journal_mode").fetchone()[0]
        'wal'
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30.0)
        if autocommit:
            conn.isolation_level = None
        conn.execute("pragma busy_timeout=30000")
        _enable_wal(conn)
        conn.execute("pragma synchronous=normal")
        conn.execute("select count(*) from sqlite_master").fetchone()
    except (sqlite3.DatabaseError, OSError) as exc:
        raise StorageError(f"cannot open run database {path}: {exc}") from None
    return conn


def open_checkpointer(conn: sqlite3.Connection) -> SqliteSaver:
    """A ready SqliteSaver on ``conn`` using the strict serializer."""
    saver = SqliteSaver(conn, serde=strict_serializer())
    try:
        saver.setup()
    except sqlite3.DatabaseError as exc:
        raise StorageError(f"cannot use run database: {exc}") from None
    return saver


def open_store(conn: sqlite3.Connection) -> SqliteStore:
    """A LangGraph store in the same database file (its own connection), for topologies whose
    agents share memory while they run (DeLM's task queue and notes)."""
    path = conn.execute("pragma database_list").fetchone()[2] or ":memory:"
    store = SqliteStore(connect(path, autocommit=True) if path != ":memory:" else conn)
    try:
        store.setup()
    except sqlite3.DatabaseError as exc:
        raise StorageError(f"cannot use run database: {exc}") from None
    return store
