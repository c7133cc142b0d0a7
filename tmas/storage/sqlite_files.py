"""Which SQLite files this process holds open, so that nothing else in the process opens and
closes them: closing *any* descriptor of a file drops every POSIX lock the process holds on
it, SQLite's included, and another process may then checkpoint the WAL under a reader of ours
(SQLite's "How To Corrupt" guide, section 2.2). The header check of a run database therefore
runs only while this process has no connection to that file.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

_open: Counter[str] = Counter()
_lock = threading.RLock()


class TrackedConnection(sqlite3.Connection):
    """A connection that counts itself open for its file until it is closed or collected."""

    _tracked: str | None = None

    def track(self, key: str) -> None:
        """Count this connection as one holding ``key`` open."""
        with _lock:
            _open[key] += 1
            self._tracked = key

    def _untrack(self) -> None:
        with _lock:
            key, self._tracked = self._tracked, None
            if key is not None:
                _open[key] -= 1
                if _open[key] <= 0:
                    del _open[key]

    def close(self) -> None:
        """Close the connection and stop counting it."""
        try:
            super().close()
        finally:
            self._untrack()

    def __del__(self) -> None:
        self._untrack()


def holds_open(path: Path) -> bool:
    """Whether this process has a connection to the file at ``path``.

    Example:
        >>> holds_open(Path("/no/such/file.sqlite"))
        False
    """
    with _lock:
        return _open.get(str(path.resolve()), 0) > 0


def open_tracked(path: Path, check: Callable[[], None], **kwargs) -> TrackedConnection:
    """Run ``check`` (which may read the file) only when no connection of this process holds
    ``path`` open, then connect; both under one lock, so no thread connects in between."""
    key = str(path.resolve())
    with _lock:
        if not _open.get(key):
            check()
        conn = sqlite3.connect(str(path), factory=TrackedConnection, **kwargs)
        conn.track(key)
    return conn
