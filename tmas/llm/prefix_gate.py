"""A lock that hands a single-sequence engine to the waiting prompt sharing the most prefix.

llama.cpp keeps the previous prompt's KV cache and re-evaluates only the tokens after the
common prefix. When many calls wait for one model (the M checks of a candidate share their
whole prompt), serving the best-matching waiter next skips most of its prompt evaluation.
Ties go to the earliest waiter, so equal prompts keep their arrival order.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(eq=False)
class _Waiter:
    key: str
    order: int


class PrefixAffinityLock:
    """Mutual exclusion whose next holder is the waiter whose key best extends the last key.

    Example:
        >>> gate = PrefixAffinityLock()
        >>> with gate.hold("system|problem A|check"):
        ...     pass
        >>> gate.last_key
        'system|problem A|check'
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = False
        self._waiting: list[_Waiter] = []
        self._counter = itertools.count()
        self.last_key = ""

    def _next(self) -> _Waiter:
        def score(waiter: _Waiter) -> tuple[int, int]:
            shared = len(os.path.commonprefix([waiter.key, self.last_key]))
            return shared, -waiter.order

        return max(self._waiting, key=score)

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        """Wait for the lock (preferring prompts that extend the last one) and hold it."""
        me = _Waiter(key, next(self._counter))
        with self._cond:
            self._waiting.append(me)
            while self._busy or self._next() is not me:
                self._cond.wait()
            self._waiting.remove(me)
            self._busy = True
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self.last_key = key
                self._cond.notify_all()
