"""Reading a SQLite run database's checkpoints without loading LangGraph, for commands that only
look (``tmas runs``, ``tmas show``): the latest checkpoint of a run, or all of them newest
first, with the same answers as the saver's ``get_tuple`` and ``list``.

A run's state is plain data, saved as msgpack. LangGraph's own channels (``__pregel_tasks``,
``branch:...``), which may hold its objects (``Send``), are left out here; a checkpoint with
any other value that is not plain data is read through the full checkpointer instead.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import ormsgpack


class NotPlainData(ValueError):
    """A saved value that is not plain msgpack data (only the full checkpointer reads it)."""


@dataclass(frozen=True)
class _Opaque:
    """An object the serializer wrote as a msgpack extension (not plain data)."""

    code: int


def _is_engine_channel(name: str) -> bool:
    return name.startswith(("__", "branch:"))


def _holds_opaque(value: Any) -> bool:
    if isinstance(value, _Opaque):
        return True
    if isinstance(value, dict):
        return any(_holds_opaque(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_opaque(v) for v in value)
    return False


def decode_checkpoint(kind: str, blob: bytes) -> dict[str, Any]:
    """A saved checkpoint of ``kind`` ``msgpack`` as plain data, LangGraph's own channels left
    out; NotPlainData for anything else.

    Example:
        >>> decode_checkpoint("msgpack", ormsgpack.packb({"channel_values": {"answer": "18"}}))
        {'channel_values': {'answer': '18'}}
        >>> decode_checkpoint("pickle", b"...")
        Traceback (most recent call last):
        ...
        tmas.storage.checkpoint_reader.NotPlainData: a value of type 'pickle'
    """
    if kind != "msgpack":
        raise NotPlainData(f"a value of type {kind!r}")
    seen: list[int] = []

    def opaque(code: int, data: bytes) -> _Opaque:
        seen.append(code)
        return _Opaque(code)

    try:
        checkpoint = ormsgpack.unpackb(blob, ext_hook=opaque)
    except ormsgpack.MsgpackDecodeError as exc:
        raise NotPlainData(str(exc)) from None
    if not isinstance(checkpoint, dict):
        raise NotPlainData(f"a checkpoint of type {type(checkpoint).__name__}")
    values = checkpoint.get("channel_values") or {}
    values = {name: value for name, value in values.items() if not _is_engine_channel(name)}
    if seen and _holds_opaque(values):
        raise NotPlainData(f"msgpack extension types {sorted(set(seen))}")
    checkpoint["channel_values"] = values
    return checkpoint


@dataclass(frozen=True)
class SavedCheckpoint:
    """One checkpoint as the saver's ``CheckpointTuple`` exposes it to readers."""

    config: dict[str, Any]
    checkpoint: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)


class SqliteCheckpointReader:
    """``get_tuple`` and ``list`` of LangGraph's SQLite saver, read-only, on ``conn``; a call
    that meets a value it cannot read as plain data is answered by ``full()``, the saver.

    Example:
        >>> reader = SqliteCheckpointReader(sqlite3.connect(":memory:"), full=lambda: None)
        >>> reader.get_tuple({"configurable": {"thread_id": "none"}}) is None
        True
    """

    def __init__(self, conn: sqlite3.Connection, full: Callable[[], Any]) -> None:
        self.conn = conn
        self.full = full

    def _rows(self, thread_id: str, limit: int | None) -> list[tuple[Any, ...]]:
        query = (
            "select checkpoint_id, type, checkpoint, metadata from checkpoints "
            "where thread_id = ? and checkpoint_ns = '' order by checkpoint_id desc"
        )
        try:
            if limit is not None:
                return self.conn.execute(query + " limit ?", (thread_id, limit)).fetchall()
            return self.conn.execute(query, (thread_id,)).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):  # a database no run has been saved in yet
                return []
            raise

    @staticmethod
    def _saved(thread_id: str, row: tuple[Any, ...]) -> SavedCheckpoint:
        checkpoint_id, kind, blob, metadata = row
        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": "",
                                   "checkpoint_id": checkpoint_id}}  # fmt: skip
        return SavedCheckpoint(config, decode_checkpoint(kind, blob), _metadata(metadata))

    def get_tuple(self, config: dict[str, Any]) -> SavedCheckpoint | Any | None:
        """The latest checkpoint of the thread ``config`` names (None when it has none)."""
        configurable = config.get("configurable") or {}
        thread_id = str(configurable["thread_id"])
        if configurable.get("checkpoint_id"):
            return self.full().get_tuple(config)
        rows = self._rows(thread_id, 1)
        if not rows:
            return None
        try:
            return self._saved(thread_id, rows[0])
        except NotPlainData:
            return self.full().get_tuple(config)

    def list(self, config: dict[str, Any], **options: Any) -> Iterator[SavedCheckpoint | Any]:
        """Every checkpoint of the thread ``config`` names, newest first."""
        configurable = config.get("configurable") or {}
        if options or configurable.get("checkpoint_id"):
            yield from self.full().list(config, **options)
            return
        thread_id = str(configurable["thread_id"])
        rows = self._rows(thread_id, None)
        try:
            read = [self._saved(thread_id, row) for row in rows]
        except NotPlainData:
            yield from self.full().list(config)
            return
        yield from read


def _metadata(blob: Any) -> dict[str, Any]:
    try:
        found = json.loads(blob) if blob else {}
    except (TypeError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
