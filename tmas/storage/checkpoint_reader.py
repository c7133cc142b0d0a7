"""Reading a SQLite run database's checkpoints without loading LangGraph, for commands that only
look (``tmas runs``, ``tmas show``): the latest checkpoint of a run, or all of them newest
first, with the same answers as the saver's ``get_tuple`` and ``list``.

A run's state is plain data, saved as msgpack. LangGraph's own channels (``__pregel_tasks``,
``branch:...``), which may hold its objects (``Send``), are left out here; a checkpoint with
any other value that is not plain data is read through the full checkpointer instead.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import ormsgpack

from tmas.storage.sqlite import rows_if_any


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
    """``get_tuple`` and ``list`` of LangGraph's SQLite saver, read-only, on ``conn``: the
    checkpoints' configs, values and metadata (not their pending writes). A call that meets a
    value it cannot read as plain data, or asks for more than that, is answered by
    ``saver()``, LangGraph's saver.

    Example:
        >>> reader = SqliteCheckpointReader(sqlite3.connect(":memory:"), saver=lambda: None)
        >>> reader.get_tuple({"configurable": {"thread_id": "none"}}) is None
        True
    """

    def __init__(self, conn: sqlite3.Connection, saver: Callable[[], Any]) -> None:
        self.conn = conn
        self.saver = saver

    def _rows(self, thread: str, space: str, limit: int | None) -> list[tuple[Any, ...]]:
        query = (
            "select checkpoint_id, type, checkpoint, metadata from checkpoints "
            "where thread_id = ? and checkpoint_ns = ? order by checkpoint_id desc"
        )
        if limit is not None:
            return rows_if_any(self.conn, query + " limit ?", (thread, space, limit))
        return rows_if_any(self.conn, query, (thread, space))

    @staticmethod
    def _saved(thread: str, space: str, row: tuple[Any, ...]) -> SavedCheckpoint:
        checkpoint_id, kind, blob, metadata = row
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": space,
                                   "checkpoint_id": checkpoint_id}}  # fmt: skip
        return SavedCheckpoint(config, decode_checkpoint(kind, blob), _metadata(metadata))

    @staticmethod
    def _thread(config: dict[str, Any] | None) -> tuple[str, str] | None:
        """The thread and namespace a plain read of ``config`` names (None: the saver's)."""
        configurable = (config or {}).get("configurable") or {}
        if "thread_id" not in configurable or configurable.get("checkpoint_id"):
            return None
        return str(configurable["thread_id"]), str(configurable.get("checkpoint_ns") or "")

    def get_tuple(self, config: dict[str, Any]) -> SavedCheckpoint | Any | None:
        """The latest checkpoint of the thread ``config`` names (None when it has none)."""
        named = self._thread(config)
        if named is None:
            return self.saver().get_tuple(config)
        rows = self._rows(*named, 1)
        if not rows:
            return None
        try:
            return self._saved(*named, rows[0])
        except NotPlainData:
            return self.saver().get_tuple(config)

    def list(
        self, config: dict[str, Any] | None, **options: Any
    ) -> Iterator[SavedCheckpoint | Any]:
        """Every checkpoint of the thread ``config`` names, newest first, read one at a time."""
        named = self._thread(config)
        if named is None or options:
            yield from self.saver().list(config, **options)
            return
        rows = self._rows(*named, None)
        for index, row in enumerate(rows):
            try:
                saved = self._saved(*named, row)
            except NotPlainData:  # the rest as the saver reads them
                yield from itertools.islice(self.saver().list(config), index, None)
                return
            yield saved


def _metadata(blob: Any) -> dict[str, Any]:
    try:
        found = json.loads(blob) if blob else {}
    except (TypeError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}
