"""What a node hands the run, checked, and a node's failure named.

LangGraph drops an update key that is no field of the state without a word; a node wrapped in
:class:`GuardedNode` instead fails, naming the node and the key, when it returns a key that is
neither a field of the run's state nor one of its channels. An error a node raises keeps its
type (retries and fatal stops still read it) and gains a note naming the node, its type and,
when the error was raised in a plugin's code, the plugin file, function and line, which
:func:`tmas.lifecycle.failure_text.failure_message` prints.
"""

from __future__ import annotations

import traceback
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from langgraph.errors import GraphBubbleUp

from tmas.graphs.plugin_files import module_of


class NodeContractError(ValueError):
    """A node returned a key that is no field of the run's state and no channel of it."""


def plugin_files(refs: Collection[str]) -> dict[str, str]:
    """The source file of each loaded plugin of ``refs`` -> its reference (plugins without a
    file left out).

    Example:
        >>> plugin_files([])
        {}
    """
    found = {}
    for ref in refs:
        path = getattr(module_of(ref), "__file__", None)
        if path:
            found[str(Path(path).resolve())] = ref
    return found


def plugin_frame(exc: BaseException, files: Mapping[str, str]) -> str | None:
    """Where in a plugin's code ``exc`` was raised (the innermost frame in one of ``files``):
    ``plugin REF, function NAME, line N``; None when no plugin frame is in its traceback.

    Example:
        >>> try:
        ...     int("x")
        ... except ValueError as exc:
        ...     plugin_frame(exc, {}) is None
        True
    """
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        ref = files.get(str(Path(frame.filename).resolve()))
        if ref is not None:
            found = f"plugin {ref}, function {frame.name}, line {frame.lineno}"
    return found


class GuardedNode:
    """``action`` (a node callable, sync and possibly async through ``acall``) whose updates
    are checked against the run's state ``keys`` and whose errors name node ``node_id``.

    Example:
        >>> node = GuardedNode(lambda state: {"sparkle": 1}, "shout", "shout", {"problem"})
        >>> node({})
        Traceback (most recent call last):
        ...
        tmas.graphs.node_guard.NodeContractError: node shout (shout) returned 'sparkle', ...
    """

    def __init__(
        self,
        action: Any,
        node_id: str,
        node_type: str,
        keys: Collection[str],
        plugins: Mapping[str, str] | None = None,
    ) -> None:
        self.action = action
        self.node_id, self.node_type = node_id, node_type
        self.keys = frozenset(keys)
        self.plugins = dict(plugins or {})
        if hasattr(action, "acall"):
            self.acall = self._acall

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            update = self.action(*args, **kwargs)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            self._name(exc)
            raise
        return self.checked(update)

    async def _acall(self, *args: Any, **kwargs: Any) -> Any:
        try:
            update = await self.action.acall(*args, **kwargs)
        except GraphBubbleUp:
            raise
        except Exception as exc:
            self._name(exc)
            raise
        return self.checked(update)

    def _name(self, exc: Exception) -> None:
        """Add a note to ``exc`` naming this node (once: the innermost node that saw it) and the
        plugin code that raised it."""
        notes = getattr(exc, "__notes__", [])
        if not any(note.startswith("at node ") for note in notes):
            where = plugin_frame(exc, self.plugins)
            exc.add_note(f"at node {self.node_id} ({self.node_type})"
                         + (f", raised in {where}" if where else ""))  # fmt: skip

    def checked(self, update: Any) -> Any:
        """``update`` when every key of it is a state key; NodeContractError otherwise."""
        if isinstance(update, Mapping):
            unknown = sorted(key for key in update if key not in self.keys)
            if unknown:
                raise NodeContractError(
                    f"node {self.node_id} ({self.node_type}) returned "
                    f"{', '.join(map(repr, unknown))}, which is no field of the run's state and "
                    "no channel of it: declare a channel (the spec's channels: block or "
                    "register_channel, listed in the node type's writes) or return a state field"
                )
        return update
