"""Runs saved in PostgreSQL, so many processes on many machines can share one run database.

Needs the ``postgres`` extra (``langgraph-checkpoint-postgres``, ``psycopg``). Tables are
created on first use; processes opening a new database at once take turns (an advisory lock).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tmas.storage.checkpointer import strict_serializer
from tmas.storage.handle import Storage, redact
from tmas.storage.run_registry import RunRegistry, Upgrade
from tmas.storage.sql import PostgresSql
from tmas.storage.sqlite import StorageError

_SETUP_LOCK = zlib.crc32(b"tmas-storage-setup")
CONNECT_TIMEOUT_S = 10
SETUP_WAIT_S = 120.0


@contextmanager
def _setup_turn(conn: Any) -> Iterator[None]:
    """Hold the setup lock while tables are created. The lock is polled, never waited for
    inside a statement: LangGraph's migrations build indexes concurrently, which wait for
    every open transaction, including one blocked on this lock."""
    deadline = time.monotonic() + SETUP_WAIT_S
    while not conn.execute("select pg_try_advisory_lock(%s)", (_SETUP_LOCK,)).fetchone()[0]:
        if time.monotonic() > deadline:
            raise StorageError("timed out waiting for another process to set up the database")
        time.sleep(0.05)
    try:
        yield
    finally:
        conn.execute("select pg_advisory_unlock(%s)", (_SETUP_LOCK,))


def _modules() -> tuple[Any, Any, Any, Any]:
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.store.postgres import PostgresStore
        from psycopg.rows import dict_row
    except ImportError:
        raise StorageError(
            "a postgresql:// run database needs the postgres extra: pip install 'tmas[postgres]'"
        ) from None
    from tmas.storage.async_methods import with_async_methods

    return psycopg, with_async_methods(PostgresSaver), PostgresStore, dict_row


def _connect(url: str, **options: Any) -> Any:
    psycopg = _modules()[0]
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, **options)
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StorageError(f"cannot open run database {redact(url)}: {reason}") from None


def postgres_storage(url: str, upgrade: Upgrade | None = None) -> Storage:
    """Open the run database at a ``postgresql://`` URL (tables are created when missing; runs
    saved before plans are given theirs with ``upgrade``, see :class:`RunRegistry`)."""
    psycopg, saver_class, store_class, dict_row = _modules()
    registry_conn = _connect(url)
    saver_conn = _connect(url, prepare_threshold=0, row_factory=dict_row)
    opened = [registry_conn, saver_conn]
    try:
        with _setup_turn(registry_conn):
            saver = saver_class(saver_conn, serde=strict_serializer())
            saver.setup()
            registry = RunRegistry(PostgresSql(registry_conn), upgrade)
    except psycopg.Error as exc:
        for conn in opened:
            conn.close()
        raise StorageError(f"cannot use run database {redact(url)}: {exc}") from None

    def open_store() -> Any:
        conn = _connect(url, prepare_threshold=0, row_factory=dict_row)
        opened.append(conn)
        store = store_class(conn)
        with _setup_turn(registry_conn):
            store.setup()
        return store

    def close() -> None:
        for conn in opened:
            conn.close()

    return Storage(redact(url), lambda: saver, registry, open_store, close)
