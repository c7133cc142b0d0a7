"""An opened run database (checkpointer, run registry, store) and how its location is shown."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from tmas.storage.run_registry import RunRegistry


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
    """An opened run database: checkpointer, run registry and (on first use) the shared store."""

    location: str
    checkpointer: BaseCheckpointSaver
    registry: RunRegistry
    _open_store: Callable[[], BaseStore]
    _close: Callable[[], None]
    _store: BaseStore | None = field(default=None, init=False)

    def store(self) -> BaseStore:
        """The LangGraph store of this database (opened once, on first use)."""
        if self._store is None:
            self._store = self._open_store()
        return self._store

    def close(self) -> None:
        """Close every connection this storage opened."""
        self._close()
