"""Name-keyed registries of pluggable pieces (node types, task builders, selection rules...)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def register_in(table: dict[str, Any], kind: str, name: str) -> Callable[[Any], Any]:
    """A decorator that files its argument in ``table`` under ``name``; registering another
    item under a taken name is refused (the same item again is fine).

    Example:
        >>> table = {}
        >>> register_in(table, "widget", "w")(len) is len and table == {"w": len}
        True
        >>> register_in(table, "widget", "w")(str)
        Traceback (most recent call last):
        ...
        ValueError: widget 'w' is already registered
    """

    def decorate(item: Any) -> Any:
        if name in table and table[name] is not item:
            raise ValueError(f"{kind} {name!r} is already registered")
        table[name] = item
        return item

    return decorate
