"""Reading a SQLite run database's shared store without loading LangGraph, for commands that
only look (``tmas memory ls``, ``show``, ``export``): the store's ``list_namespaces`` and
``search`` (without a query or filter), over the table LangGraph's ``SqliteStore`` writes.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from tmas.storage.sqlite import rows_if_any


@dataclass(frozen=True)
class StoredItem:
    """One item, as the store's ``search`` gives it to readers."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]


class SqliteStoreReader:
    """``list_namespaces`` and ``search`` of LangGraph's SQLite store, read-only, on ``conn``.

    Example:
        >>> reader = SqliteStoreReader(sqlite3.connect(":memory:"))
        >>> reader.list_namespaces(prefix=("tmas_memory",)), reader.search(("tmas_memory", "x"))
        ([], [])
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def list_namespaces(
        self,
        *,
        prefix: tuple[str, ...] = (),
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """The namespaces under ``prefix``, cut to ``max_depth`` labels, sorted."""
        where, args = _under(prefix)
        found = rows_if_any(self.conn, f"select distinct prefix from store where {where}", args)
        spaces = {tuple(row[0].split("."))[: max_depth or None] for row in found}
        return sorted(spaces)[offset : offset + limit]

    def search(
        self, namespace: tuple[str, ...], *, limit: int = 10, offset: int = 0
    ) -> list[StoredItem]:
        """The items in ``namespace`` and the namespaces under it, ``limit`` from ``offset``."""
        where, args = _under(namespace)
        found = rows_if_any(
            self.conn,
            f"select prefix, key, value from store where {where} order by prefix, key "
            "limit ? offset ?",
            (*args, limit, offset),
        )
        return [StoredItem(tuple(p.split(".")), k, json.loads(v)) for p, k, v in found]


def _under(namespace: tuple[str, ...]) -> tuple[str, tuple[Any, ...]]:
    """The condition on ``prefix`` for ``namespace`` and everything under it.

    Example:
        >>> _under(("tmas_memory", "math"))
        ('(prefix = ? or substr(prefix, 1, ?) = ?)', ('tmas_memory.math', 17, 'tmas_memory.math.'))
    """
    if not namespace:
        return "1 = 1", ()
    joined = ".".join(namespace)
    return "(prefix = ? or substr(prefix, 1, ?) = ?)", (joined, len(joined) + 1, f"{joined}.")
