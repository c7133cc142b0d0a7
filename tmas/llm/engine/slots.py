"""The context's sequences and the tokens whose KV cache each one holds.

A sequence that finished keeps its cache until its slot is needed, so a later prompt that
starts the same way (a reflection after a summary of the same candidate, the next
iteration's solver prompts) copies that prefix instead of computing it again.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

_clock = itertools.count()


def shared_length(a: list[int], b: list[int]) -> int:
    """How many leading tokens ``a`` and ``b`` have in common.

    Example:
        >>> shared_length([1, 2, 3], [1, 2, 4, 5])
        2
    """
    size = min(len(a), len(b))
    if a[:size] == b[:size]:
        return size
    low, high = 0, size
    while low < high:  # a[:low] == b[:low] holds; find the first mismatch by bisection
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


@dataclass(eq=False)
class Slot:
    """One sequence of the context: the tokens in its KV cache, and whether a request owns it."""

    seq_id: int
    tokens: list[int] = field(default_factory=list)
    busy: bool = False
    last_used: int = 0

    def touch(self) -> None:
        self.last_used = next(_clock)


class SlotTable:
    """All sequences; finds the longest cached prefix and the slot a new request may take.

    Example:
        >>> table = SlotTable(2)
        >>> table.slots[0].tokens = [5, 6, 7]
        >>> slot, length = table.longest_prefix([5, 6, 9])
        >>> slot.seq_id, length
        (0, 2)
    """

    def __init__(self, count: int) -> None:
        self.slots = [Slot(seq_id) for seq_id in range(count)]

    def longest_prefix(self, prompt: list[int]) -> tuple[Slot | None, int]:
        """The slot whose cache shares the most leading tokens with ``prompt``, and how many."""
        best: Slot | None = None
        best_key = (0, False)
        for slot in self.slots:
            key = (shared_length(slot.tokens, prompt), not slot.busy)  # ties: an idle slot
            if key[0] and key > best_key:
                best, best_key = slot, key
        best_length = best_key[0]
        return best, best_length

    def take_free(self) -> Slot | None:
        """An idle slot for a new request: an empty one first, else the least recently used."""
        idle = [slot for slot in self.slots if not slot.busy]
        if not idle:
            return None
        return min(idle, key=lambda slot: (bool(slot.tokens), slot.last_used))

    def idle_cached(self) -> list[Slot]:
        """Idle slots still holding a cache, least recently used first (eviction order)."""
        return sorted((s for s in self.slots if not s.busy and s.tokens), key=lambda s: s.last_used)
