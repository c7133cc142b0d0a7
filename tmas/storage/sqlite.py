"""The SQLite file every run is saved in: where it is, opening it, and what its errors mean
(the checkpointer on it is :mod:`tmas.storage.checkpointer`)."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tmas.storage.sqlite_files import open_tracked

if TYPE_CHECKING:
    from langgraph.store.sqlite import SqliteStore


class StorageError(RuntimeError):
    """The run database cannot be opened or read."""


BUSY_TIMEOUT_ENV = "TMAS_DB_BUSY_TIMEOUT_S"
DEFAULT_BUSY_TIMEOUT_S = 30.0
SQLITE_MAGIC = b"SQLite format 3\x00"


def default_db_path() -> Path:
    """Where runs are saved unless ``--db`` says otherwise: ``$TMAS_HOME/runs.sqlite``.

    ``TMAS_HOME`` defaults to ``~/.local/share/tmas``.

    Example:
        >>> default_db_path().name
        'runs.sqlite'
    """
    home = os.environ.get("TMAS_HOME") or Path.home() / ".local" / "share" / "tmas"
    return Path(home) / "runs.sqlite"


def busy_timeout_s() -> float:
    """How long a write waits for another process's write lock on a SQLite run database:
    ``$TMAS_DB_BUSY_TIMEOUT_S`` seconds, 30 by default.

    Example:
        >>> from unittest import mock
        >>> with mock.patch.dict(os.environ, {BUSY_TIMEOUT_ENV: "2.5"}):
        ...     busy_timeout_s()
        2.5
    """
    text = os.environ.get(BUSY_TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_BUSY_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86_400:
        raise StorageError(f"{BUSY_TIMEOUT_ENV} must be a number of seconds, got {text!r}")
    return value


def file_damage(path: Path) -> str | None:
    """Why the SQLite file at ``path`` is not a usable database (None when it looks whole, is
    empty or is missing), read from its header without opening it: SQLite would otherwise
    only notice a cut-off file when it reads the missing pages, after it may have written.

    Example:
        >>> import tempfile
        >>> cut = Path(tempfile.mkdtemp(), "cut.sqlite")
        >>> header = SQLITE_MAGIC + (4096).to_bytes(2, "big") + bytes(82)
        >>> _ = cut.write_bytes(header + bytes(4096 - 100) + bytes(50))
        >>> file_damage(cut)
        'the file is cut short (4146 bytes is not a whole number of 4096-byte pages)'
    """
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(100)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot read the file: {exc.strerror or exc}"
    if size == 0:
        return None
    if len(head) < 100 or not head.startswith(SQLITE_MAGIC):
        return "file is not a database"
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        return "file is not a database (bad page size)"
    if size % page:
        return f"the file is cut short ({size} bytes is not a whole number of {page}-byte pages)"
    for suffix in ("-wal", "-journal"):  # recent pages may live in the log, not the file
        try:
            if path.with_name(path.name + suffix).stat().st_size > 0:
                return None
        except FileNotFoundError:  # none, or another process just removed its journal
            continue
    pages = int.from_bytes(head[28:32], "big")
    if head[24:28] == head[92:96] and pages * page > size:
        return f"the file is cut short ({size // page} of its {pages} pages are there)"
    return None


def describe_database_error(exc: BaseException, location: str | Path) -> str:
    """One line saying what is wrong with the run database at ``location``.

    Example:
        >>> locked = sqlite3.OperationalError("database is locked")
        >>> describe_database_error(locked, "r.sqlite").split(" (")[0]
        'run database r.sqlite is locked by another process'
        >>> describe_database_error(sqlite3.DatabaseError("file is not a database"), "r.sqlite")
        'run database r.sqlite is damaged or not a run database: file is not a database'
    """
    reason = " ".join(str(exc).split()) or type(exc).__name__
    if "locked" in reason or "busy" in reason:
        waited = f"{busy_timeout_s():g}"
        return (
            f"run database {location} is locked by another process (waited {waited} s; "
            f"set {BUSY_TIMEOUT_ENV} to wait longer)"
        )
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return f"run database {location} is damaged or not a run database: {reason}"
    return f"cannot use run database {location}: {reason}"


def _enable_wal(conn: sqlite3.Connection, timeout_s: float) -> None:
    """Switch to WAL; the switch needs a moment alone with a new file, so processes opening it
    at the same time wait their turn (SQLite answers "locked" at once here, without waiting),
    for about ``timeout_s`` in all."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn.execute("pragma journal_mode=wal")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
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

    def check_header() -> None:  # reads the file: only while this process holds it closed
        damage = file_damage(path)
        if damage:  # look again: a process creating it may be halfway through its first write
            time.sleep(0.2)
            damage = file_damage(path)
        if damage:
            raise StorageError(f"run database {path} is damaged or not a run database: {damage}")

    timeout = busy_timeout_s()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = open_tracked(path, check_header, check_same_thread=False, timeout=timeout)
        if autocommit:
            conn.isolation_level = None
        conn.execute(f"pragma busy_timeout={int(timeout * 1000)}")
        _enable_wal(conn, timeout)
        conn.execute("pragma synchronous=normal")
        conn.execute("select count(*) from sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StorageError(describe_database_error(exc, path)) from None
    except OSError as exc:
        raise StorageError(f"cannot open run database {path}: {exc}") from None
    return conn


def check_writable(conn: sqlite3.Connection, location: str | Path) -> None:
    """Take and release the write lock of ``conn``'s database without changing it, waiting
    at most the busy timeout; StorageError when another process keeps it (or it is read-only).

    Example:
        >>> check_writable(sqlite3.connect(":memory:"), ":memory:")
    """
    try:
        conn.execute("begin immediate")
        conn.execute("rollback")
    except sqlite3.DatabaseError as exc:
        raise StorageError(describe_database_error(exc, location)) from None


def location_of(conn: sqlite3.Connection) -> str:
    """The file a SQLite connection is on (``:memory:`` for none), for messages.

    Example:
        >>> location_of(sqlite3.connect(":memory:"))
        ':memory:'
    """
    try:
        return conn.execute("pragma database_list").fetchone()[2] or ":memory:"
    except sqlite3.DatabaseError:
        return "(unknown)"


def open_store(conn: sqlite3.Connection) -> SqliteStore:
    """A LangGraph store in the same database file (its own connection), for topologies whose
    agents share memory while they run (DeLM's task queue and notes; imported here, as it
    loads NumPy)."""
    from langgraph.store.sqlite import SqliteStore

    path = location_of(conn)
    store = SqliteStore(connect(path, autocommit=True) if path != ":memory:" else conn)
    for attempt in range(STORE_SETUP_ATTEMPTS):
        try:
            store.setup()
            return store
        except sqlite3.DatabaseError as exc:
            if not _setup_race(exc) or attempt == STORE_SETUP_ATTEMPTS - 1:
                raise StorageError(describe_database_error(exc, path)) from None
            time.sleep(0.05 * (attempt + 1))  # another connection is creating the same tables
    return store


STORE_SETUP_ATTEMPTS = 20


def _setup_race(exc: sqlite3.DatabaseError) -> bool:
    """Whether creating the store's tables failed because another connection was creating them
    at the same moment (a migration recorded or a column added twice): then try again.

    Example:
        >>> _setup_race(sqlite3.IntegrityError("UNIQUE constraint failed: store_migrations.v"))
        True
        >>> _setup_race(sqlite3.DatabaseError("file is not a database"))
        False
    """
    text = str(exc)
    return isinstance(exc, sqlite3.IntegrityError) or any(
        marker in text for marker in ("duplicate column", "already exists")
    )


def rows_if_any(
    conn: sqlite3.Connection, query: str, args: tuple[Any, ...]
) -> list[tuple[Any, ...]]:
    """The rows of a read, none when its table was never made (a database nothing was saved
    in yet).

    Example:
        >>> rows_if_any(sqlite3.connect(":memory:"), "select * from checkpoints", ())
        []
    """
    try:
        return conn.execute(query, args).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
