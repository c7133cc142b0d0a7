"""One small interface over the SQL connections the run registry is kept in (SQLite, psycopg).

Statements are written once with ``?`` placeholders; each adapter runs them its own way.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Protocol


class SqlConnection(Protocol):
    """What the run registry needs from a database connection."""

    integrity_errors: tuple[type[BaseException], ...]
    database_errors: tuple[type[BaseException], ...]

    def write(self, sql: str, params: tuple = ()) -> None:
        """Run one statement in its own transaction."""

    def rows(self, sql: str, params: tuple = ()) -> list[tuple[Any, ...]]:
        """Run one query and return every row."""

    def columns(self, table: str) -> set[str]:
        """The column names of ``table``."""


class SqliteSql:
    """The registry's statements on a ``sqlite3`` connection.

    Example:
        >>> db = SqliteSql(sqlite3.connect(":memory:"))
        >>> db.write("create table t (a text)"); db.write("insert into t values (?)", ("x",))
        >>> db.rows("select a from t"), db.columns("t")
        ([('x',)], {'a'})
    """

    integrity_errors = (sqlite3.IntegrityError,)
    database_errors = (sqlite3.DatabaseError,)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def write(self, sql: str, params: tuple = ()) -> None:
        with self.conn:
            self.conn.execute(sql, params)

    def rows(self, sql: str, params: tuple = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, params).fetchall()

    def columns(self, table: str) -> set[str]:
        return {row[1] for row in self.conn.execute(f"pragma table_info({table})")}


class PostgresSql:
    """The registry's statements on an autocommitting psycopg connection (tuple rows)."""

    def __init__(self, conn: Any) -> None:
        import psycopg

        self.conn = conn
        self.integrity_errors = (psycopg.errors.IntegrityError,)
        self.database_errors = (psycopg.Error,)

    def write(self, sql: str, params: tuple = ()) -> None:
        self.conn.execute(sql.replace("?", "%s"), params)

    def rows(self, sql: str, params: tuple = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql.replace("?", "%s"), params).fetchall()

    def columns(self, table: str) -> set[str]:
        found = self.conn.execute(
            "select column_name from information_schema.columns where table_name = %s",
            (table,),
        ).fetchall()
        return {row[0] for row in found}
