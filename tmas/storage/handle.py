"""An opened run database (checkpointer, run registry, store) and how its location is shown."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from tmas.storage.run_registry import RunRegistry

if TYPE_CHECKING:  # LangGraph loads with the checkpointer, when a database is opened
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import BaseStore


def redact(url: str) -> str:
    """A database URL safe to print or save: the password is replaced by ``***``.

    Example:
        >>> redact("postgresql://me:secret@db:5432/runs")
        'postgresql://me:***@db:5432/runs'
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass
class Storage:
    """An opened run database: checkpointer, run registry and (on first use) the shared store.

    The checkpointer (LangGraph's saver) is opened on first use; ``checkpoint_reader`` answers the
    saver's ``get_tuple`` and ``list``, and ``store_reader`` the store's ``list_namespaces``
    and ``search``, for code that only reads (a SQLite database reads them without loading
    LangGraph; any other gives the saver or store itself).
    """

    location: str
    _open_checkpointer: Callable[[], BaseCheckpointSaver]
    registry: RunRegistry
    _open_store: Callable[[], BaseStore]
    _close: Callable[[], None]
    _open_reader: Callable[[Storage], Any] | None = None
    _open_store_reader: Callable[[], Any] | None = None
    _store: BaseStore | None = field(default=None, init=False)
    _checkpointer: BaseCheckpointSaver | None = field(default=None, init=False)
    _opening: threading.Lock = field(default_factory=threading.Lock, init=False)

    @property
    def checkpointer(self) -> BaseCheckpointSaver:
        """The checkpointer runs are saved with (opened once, on first use)."""
        with self._opening:
            if self._checkpointer is None:
                self._checkpointer = self._open_checkpointer()
            return self._checkpointer

    @property
    def checkpoint_reader(self) -> Any:
        """What reads saved checkpoints: ``get_tuple`` and ``list`` as the saver has them."""
        if self._open_reader is None or self._checkpointer is not None:
            return self.checkpointer
        return self._open_reader(self)

    @property
    def store_reader(self) -> Any:
        """What reads the shared store: ``list_namespaces`` and ``search`` as the store has
        them (a SQLite database reads them without loading LangGraph)."""
        if self._open_store_reader is None or self._store is not None:
            return self.store()
        return self._open_store_reader()

    def store(self) -> BaseStore:
        """The LangGraph store of this database (opened once, on first use)."""
        if self._store is None:
            self._store = self._open_store()
        return self._store

    def close(self) -> None:
        """Close every connection this storage opened."""
        self._close()
