"""The shared task queue and verified-notes board of decentralised (DeLM) workers.

Both live in a LangGraph Store under the run's namespace, so workers running in parallel see
each other's writes at once and everything persists with the run (SQLite store on disk).
Claims are check-and-set under a lock: two workers never hold the same task, and a claim
that is not completed within its time-to-live can be taken by another worker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # LangGraph loads when a run starts, not with this module
    from langgraph.store.base import BaseStore


_CLAIM_LOCK = threading.Lock()
SEARCH_LIMIT = 10_000


class TaskQueue:
    """Tasks with states open -> claimed -> done.

    Example:
        >>> from langgraph.store.memory import InMemoryStore
        >>> queue = TaskQueue(InMemoryStore(), ("run",))
        >>> queue.add("find x", added_by="seed")
        't0'
        >>> queue.claim("w1", ttl_s=60)["text"], queue.claim("w2", ttl_s=60)
        ('find x', None)
    """

    def __init__(
        self, store: BaseStore, namespace: tuple[str, ...], clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.namespace = (*namespace, "tasks")
        self.clock = clock

    def all(self) -> list[dict[str, Any]]:
        """Every task, in the order they were added."""
        items = self.store.search(self.namespace, limit=SEARCH_LIMIT)
        return sorted((item.value for item in items), key=lambda t: t["order"])

    def add(self, text: str, *, added_by: str, payload: dict[str, Any] | None = None) -> str:
        """Add an open task; returns its id."""
        with _CLAIM_LOCK:
            order = len(self.all())
            task_id = f"t{order}"
            self.store.put(
                self.namespace,
                task_id,
                {
                    "id": task_id,
                    "order": order,
                    "text": text,
                    "payload": payload or {},
                    "added_by": added_by,
                    "status": "open",
                    "claimed_by": None,
                    "claim_expires": None,
                    "claims": 0,
                },
            )
        return task_id

    def claim(self, worker: str, ttl_s: float) -> dict[str, Any] | None:
        """Atomically take the first open task, or one whose claim expired; None if none."""
        with _CLAIM_LOCK:
            now = self.clock()
            for task in self.all():
                expired = task["status"] == "claimed" and task["claim_expires"] < now
                if task["status"] == "open" or expired:
                    task.update(
                        status="claimed",
                        claimed_by=worker,
                        claim_expires=now + ttl_s,
                        claims=task["claims"] + 1,
                    )
                    self.store.put(self.namespace, task["id"], task)
                    return task
        return None

    def complete(self, task_id: str, worker: str) -> bool:
        """Mark a task done if ``worker`` still holds it (False when its claim was lost)."""
        with _CLAIM_LOCK:
            item = self.store.get(self.namespace, task_id)
            if item is None or item.value["claimed_by"] != worker:
                return False
            task = dict(item.value, status="done")
            self.store.put(self.namespace, task_id, task)
            return True

    def unfinished(self) -> int:
        """Tasks not yet done."""
        return sum(1 for task in self.all() if task["status"] != "done")


class NoteBoard:
    """The shared context: notes that passed the verification gate, in order of acceptance."""

    def __init__(self, store: BaseStore, namespace: tuple[str, ...]) -> None:
        self.store = store
        self.namespace = (*namespace, "notes")

    def notes(self) -> list[dict[str, Any]]:
        """Accepted notes, oldest first."""
        items = self.store.search(self.namespace, limit=SEARCH_LIMIT)
        return sorted((item.value for item in items), key=lambda n: n["order"])

    def write(self, text: str, evidence: str, *, worker: str, task_id: str) -> None:
        """Append an accepted note."""
        with _CLAIM_LOCK:
            order = len(self.notes())
            self.store.put(
                self.namespace,
                f"n{order}",
                {
                    "order": order,
                    "text": text,
                    "evidence": evidence,
                    "worker": worker,
                    "task_id": task_id,
                },
            )
