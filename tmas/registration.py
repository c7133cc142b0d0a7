"""The registry: every extension a run can use, by kind and name, in one object.

Node types, task builders, planners, stop conditions, selection rules, state channels,
similarities, roles and prompt templates are each a :class:`Table` of :class:`Entry` values
that remember the module that registered them (``tmas...`` for the built-in ones, a plugin's
own module otherwise). Registering works the same in every table: the same value again is
harmless, the same definition run again replaces it (a notebook cell or a plugin file run
anew: the same function of the same module, or for a plain value, the same module), and any
other value under a taken name is refused, naming who holds it.

What a module registers when it is imported is recorded (:func:`declare`), so the registry
holds the same entries whatever the order of imports: :func:`registry` builds the process's
registry on first use, loading the built-in modules (:data:`BUILTIN_MODULES`) and replaying
what any module imported before recorded; afterwards each registration reaches it at once.
Plugins are loaded explicitly (``--plugin``, ``tmas.plugin``'s ``load_plugin``) or imported by
hand.

Example:
    >>> "solve" in registry().nodes and registry().nodes.entry("solve").owner
    'tmas.graphs.builtin'
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")

KINDS = {
    "nodes": "node type",
    "tasks": "task builder",
    "planners": "planner",
    "stops": "stop condition",
    "selections": "selection rule",
    "channels": "channel",
    "similarities": "similarity",
    "roles": "role",
    "prompts": "prompt",
}
"""Each table of a registry (its attribute) and what its entries are called."""

BUILTIN_MODULES = (
    "tmas.roles",
    "tmas.nodes.prompts",
    "tmas.nodes.channels",
    "tmas.memory.similarity",
    "tmas.nodes.control.planners",
    "tmas.nodes.control.stop_rules",
    "tmas.nodes.control.selection_rules",
    "tmas.graphs.builtin",
    "tmas.graphs.builtin_chains",
    "tmas.graphs.builtin_pipeline",
)
"""The modules whose registrations are the built-in entries, loaded by a registry's
constructor."""


class UnknownName(ValueError, KeyError):
    """A name no entry of a table has (a ValueError for callers, a KeyError for mappings)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered item, its name and the module that registered it."""

    name: str
    item: T
    owner: str

    @property
    def builtin(self) -> bool:
        """Whether the package itself registered it.

        Example:
            >>> Entry("x", 1, "tmas.roles").builtin, Entry("x", 1, "my_plugin").builtin
            (True, False)
        """
        return self.owner == "tmas" or self.owner.startswith("tmas.")


def definition(item: Any) -> Any:
    """Where ``item`` was defined: a function's (or class's) module and qualified name, that of
    the function a registered entry wraps (``factory``, ``plan``, ``build``), else nothing (a
    plain value: any two are the same definition).

    Example:
        >>> definition(definition)
        ('tmas.registration', 'definition')
        >>> definition(Entry("x", 1, "m")) is None
        True
    """
    for candidate in (item, *(getattr(item, n, None) for n in ("factory", "plan", "build"))):
        if callable(candidate) and hasattr(candidate, "__qualname__"):
            return getattr(candidate, "__module__", None), candidate.__qualname__
    return None


class Table(Generic[T]):
    """The entries of one kind, by name.

    Example:
        >>> table = Table("widget")
        >>> table.add("w", len, "my_plugin") is len and table["w"] is len
        True
        >>> table.add("w", str, "other_plugin")
        Traceback (most recent call last):
        ...
        ValueError: widget 'w' is already registered by my_plugin; register yours under another name
        >>> table["v"]
        Traceback (most recent call last):
        ...
        tmas.registration.UnknownName: unknown widget 'v'; known: w
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}
        self._lock = threading.Lock()

    def add(self, name: str, item: T, owner: str) -> T:
        """File ``item`` under ``name`` for ``owner`` (the one rule: see the module)."""
        with self._lock:
            held = self._entries.get(name)
            if held is not None and (held.item is item or held.item == item):
                return item
            if held is not None and not (
                held.owner == owner and definition(held.item) == definition(item)
            ):
                raise ValueError(
                    f"{self.kind} {name!r} is already registered by {held.owner}; register "
                    "yours under another name"
                )
            self._entries[name] = Entry(name, item, owner)
        return item

    def remove(self, name: str) -> None:
        """Forget ``name`` (nothing when it is unknown)."""
        with self._lock:
            self._entries.pop(name, None)

    def entry(self, name: str) -> Entry[T]:
        """The entry of ``name``; UnknownName naming the known ones otherwise."""
        found = self._entries.get(name)
        if found is None:
            raise UnknownName(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")
        return found

    def __getitem__(self, name: str) -> T:
        return self.entry(name).item

    def get(self, name: str, default: Any = None) -> Any:
        """The item of ``name``, or ``default``."""
        found = self._entries.get(name)
        return default if found is None else found.item

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        """Every name, sorted."""
        return sorted(self._entries)

    def items(self) -> list[tuple[str, T]]:
        """Every (name, item), in registration order."""
        return [(name, entry.item) for name, entry in list(self._entries.items())]

    def entries(self) -> list[Entry[T]]:
        """Every entry, in registration order."""
        return list(self._entries.values())


class Registry:
    """Every extension by kind: node types (``nodes``), task builders (``tasks``),
    ``planners``, stop conditions (``stops``), selection rules (``selections``), state
    ``channels``, ``similarities``, ``roles`` and prompt templates (``prompts``). The
    constructor loads the built-in entries; :meth:`load` loads a module's.

    Example:
        >>> fresh = Registry()
        >>> "vote_all" in fresh.selections and "jaccard" in fresh.similarities
        True
    """

    nodes: Table[Any]
    tasks: Table[Any]
    planners: Table[Any]
    stops: Table[Any]
    selections: Table[Any]
    channels: Table[Any]
    similarities: Table[Any]
    roles: Table[Any]
    prompts: Table[str]

    def __init__(self, *, builtins: bool = True) -> None:
        for attribute, kind in KINDS.items():
            setattr(self, attribute, Table(kind))
        if builtins:
            self.load(*BUILTIN_MODULES)

    def table(self, kind: str) -> Table[Any]:
        """The table of ``kind`` (an attribute name or what its entries are called)."""
        for attribute, name in KINDS.items():
            if kind in (attribute, name):
                return getattr(self, attribute)
        raise ValueError(f"no table {kind!r}; tables: {', '.join(KINDS)}")

    def load(self, *modules: str) -> None:
        """Import ``modules`` (if not yet) and add what each registered."""
        for module in modules:
            importlib.import_module(module)
            self.replay(module)

    def replay(self, module: str) -> None:
        """Add what ``module`` recorded when it was imported."""
        for attribute, name, item in list(_DECLARED.get(module, ())):
            getattr(self, attribute).add(name, item, module)

    def snapshot(self) -> dict[str, list[Entry[Any]]]:
        """Every entry of every table (to :meth:`restore` later: a test's registrations undone).

        Example:
            >>> saved = registry().snapshot()
            >>> _ = declare("stops", "doc_example_gone", lambda state: True, __name__)
            >>> registry().restore(saved); "doc_example_gone" in registry().stops
            False
        """
        return {attribute: getattr(self, attribute).entries() for attribute in KINDS}

    def restore(self, saved: dict[str, list[Entry[Any]]]) -> None:
        """Make every table hold the entries of ``saved`` (a :meth:`snapshot`) again."""
        for attribute, entries in saved.items():
            table = getattr(self, attribute)
            with table._lock:
                table._entries = {entry.name: entry for entry in entries}

    def owned_by(self, module: str) -> dict[str, list[str]]:
        """What ``module`` registered here: table -> names.

        Example:
            >>> Registry().owned_by("tmas.nodes.control.stop_rules")["stops"][:2]
            ['run_finished', 'consensus']
        """
        found: dict[str, list[str]] = {}
        for attribute in KINDS:
            names = [e.name for e in getattr(self, attribute).entries() if e.owner == module]
            if names:
                found[attribute] = names
        return found


_DECLARED: dict[str, list[tuple[str, str, Any]]] = {}
_LOCK = threading.RLock()
_CURRENT: list[Registry] = []


def declare(table: str, name: str, item: T, owner: str) -> T:
    """Record that module ``owner`` registers ``item`` as ``name`` in ``table`` (an attribute
    of :class:`Registry`), and add it to the process's registry when it exists (ValueError when
    the name is taken: see :class:`Table`).

    Example:
        >>> declare("stops", "doc_example_stop_at_once", lambda state: True, __name__)(None)
        True
    """
    if table not in KINDS:
        raise ValueError(f"no table {table!r}; tables: {', '.join(KINDS)}")
    with _LOCK:
        if _CURRENT:
            getattr(_CURRENT[0], table).add(name, item, owner)
        _DECLARED.setdefault(owner, []).append((table, name, item))
    return item


def registry() -> Registry:
    """The registry of this process, built on first use: the built-in entries, then what every
    module imported before recorded (a plugin imported by hand).

    Example:
        >>> registry() is registry()
        True
    """
    with _LOCK:
        if not _CURRENT:
            made = Registry()
            for module in list(_DECLARED):
                if module not in BUILTIN_MODULES:
                    made.replay(module)
            _CURRENT.append(made)
        return _CURRENT[0]


def owner_of(item: Any, default: str = "__main__") -> str:
    """The module that defines ``item`` (a function or class), else the first module on the
    call stack outside the registration machinery.

    Example:
        >>> owner_of(len) in ("builtins", "__main__") or True
        True
    """
    module = getattr(item, "__module__", None)
    if isinstance(module, str) and callable(item):
        return module
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", default)
        if name not in _MACHINERY:
            return str(name)
        frame = frame.f_back  # type: ignore[assignment]
    return default


_MACHINERY = frozenset(
    {
        __name__,
        "tmas.roles",
        "tmas.nodes.prompts",
        "tmas.nodes.channels",
        "tmas.graphs.registry",
        "tmas.plugin",
    }
)
"""Modules whose register functions call :func:`owner_of` on another module's behalf."""
