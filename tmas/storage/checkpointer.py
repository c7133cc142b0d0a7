"""The checkpointer every run is saved with: LangGraph's SQLite saver with async methods and a
strict (pickle-free) serializer. Imported when a run database's checkpointer is first used
(see :class:`tmas.storage.handle.Storage`), not before: it loads LangGraph."""

from __future__ import annotations

import sqlite3
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from tmas.storage.async_methods import AsyncFromSync
from tmas.storage.sqlite import StorageError, describe_database_error, location_of


class StrictSerializer(JsonPlusSerializer):
    """LangGraph's serializer with pickle off and msgpack limited to its safe built-in types;
    a saved value it will not decode (a ``pickle`` blob, a damaged one) raises StorageError
    instead of being run or half-read.

    Example:
        >>> serde = StrictSerializer()
        >>> serde.loads_typed(serde.dumps_typed({"answer": "18"}))
        {'answer': '18'}
        >>> serde.loads_typed(("pickle", b"cos\\nsystem\\n."))
        Traceback (most recent call last):
        ...
        tmas.storage.sqlite.StorageError: refused to decode a saved checkpoint value of type...
    """

    def __init__(self) -> None:
        super().__init__(pickle_fallback=False, allowed_msgpack_modules=None)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Decode one saved value; StorageError for a type or blob that is refused."""
        try:
            return super().loads_typed(data)
        except Exception as exc:  # noqa: BLE001 - any undecodable blob is reported the same way
            raise StorageError(
                f"refused to decode a saved checkpoint value of type {data[0]!r}: "
                f"{type(exc).__name__}: {exc}"
            ) from None


def strict_serializer() -> JsonPlusSerializer:
    """A serializer that never unpickles and decodes only msgpack's safe built-in types."""
    return StrictSerializer()


class SqliteSaverWithAsync(AsyncFromSync, SqliteSaver):
    """LangGraph's SqliteSaver with async methods, so a run can be driven with ``astream``;
    its writes (a fraction of a millisecond each) are made on the loop at once."""

    writes_in_thread = False


def open_checkpointer(conn: sqlite3.Connection) -> SqliteSaver:
    """A ready SqliteSaver on ``conn`` using the strict serializer (with async methods)."""
    saver = SqliteSaverWithAsync(conn, serde=strict_serializer())
    try:
        saver.setup()
    except sqlite3.DatabaseError as exc:
        raise StorageError(describe_database_error(exc, location_of(conn))) from None
    return saver
