"""Registries of node types, fan-out task builders, loop stop conditions and selection rules,
by name.

Built-in entries come from ``tmas.graphs.builtin``; users add their own from any module::

    from tmas.graphs.registry import register_node

    @register_node("shout")
    def make_shout(ctx, **params):
        return lambda state: {"final_answer": (state.get("final_answer") or "").upper()}

and load it with ``tmas solve --plugin my_module`` or ``load_plugin("my_module")``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tmas.config import TMASConfig
from tmas.llm.router import ModelRouter
from tmas.nodes.control.selection_rules import SELECTION_RULES, register_selection
from tmas.nodes.prompts import PromptSet
from tmas.registries import register_in

__all__ = [
    "LLM_CALL_BOUNDS",
    "LLM_NODE_TYPES",
    "NODE_TYPES",
    "SELECTION_RULES",
    "STOP_CONDITIONS",
    "TASK_BUILDERS",
    "TASK_SIZES",
    "NodeContext",
    "TaskSize",
    "ensure_builtins",
    "load_plugin",
    "register_node",
    "register_selection",
    "register_stop",
    "register_tasks",
]

NodeFactory = Callable[..., Callable[[Any], dict[str, Any]]]
TaskBuilder = Callable[[dict[str, Any], TMASConfig], list[dict[str, Any]]]
StopCondition = Callable[[dict[str, Any]], bool]
CallBound = Callable[[dict[str, Any], TMASConfig], int]
TaskCount = Callable[[TMASConfig, int], int]


@dataclass(frozen=True)
class TaskSize:
    """How many tasks a builder sends: ``count(config, width)`` in an iteration of ``width``
    candidates (for progress totals), and ``label`` for diagrams (e.g. ``N x M``)."""

    count: TaskCount
    label: str


@dataclass(frozen=True)
class NodeContext:
    """What a node factory may use: the run's config, its model router (already set to the
    node's ``role:`` when the spec gives one) and the run's prompt templates."""

    config: TMASConfig
    router: ModelRouter
    prompts: PromptSet = field(default_factory=PromptSet)


NODE_TYPES: dict[str, NodeFactory] = {}
LLM_NODE_TYPES: set[str] = set()
LLM_CALL_BOUNDS: dict[str, CallBound] = {}
TASK_BUILDERS: dict[str, TaskBuilder] = {}
TASK_SIZES: dict[str, TaskSize] = {}
STOP_CONDITIONS: dict[str, StopCondition] = {}


def register_node(
    name: str, *, calls_llm: bool = False, max_calls: CallBound | None = None
) -> Callable[[NodeFactory], NodeFactory]:
    """Register a node factory ``(ctx: NodeContext, **params) -> node callable`` as ``name``.

    Nodes that ``calls_llm`` get the run's retry policy unless their spec sets one, and count
    one model call per run in progress totals; a node whose number of calls depends on what
    it finds gives ``max_calls(params, config)``, the most it makes in one run (progress
    totals then say "at most").

    Example:
        >>> @register_node("doc_example_noop")
        ... def make_noop(ctx, **params):
        ...     return lambda state: {}
        >>> "doc_example_noop" in NODE_TYPES
        True
    """
    register = register_in(NODE_TYPES, "node type", name)

    def decorate(factory: NodeFactory) -> NodeFactory:
        register(factory)  # raises before anything changes when the name is taken
        if calls_llm:
            LLM_NODE_TYPES.add(name)
            if max_calls is not None:
                LLM_CALL_BOUNDS[name] = max_calls
        return factory

    return decorate


def register_tasks(
    name: str, *, count: TaskCount | None = None, label: str = "?"
) -> Callable[[TaskBuilder], TaskBuilder]:
    """Register a fan-out task builder ``(state, config) -> list of task payloads``.

    ``count(config, width)`` says how many tasks it sends in an iteration of ``width``
    candidates when no model call failed (progress totals are exact then; without it they
    count one task per candidate and say "about"); ``label`` names that number in diagrams.

    Example:
        >>> @register_tasks("doc_example_pairs", count=lambda config, width: 2 * width,
        ...                 label="2N")
        ... def pairs(state, config):
        ...     return [{"problem": state["problem"], "copy": i} for i in range(2)]
        >>> TASK_SIZES["doc_example_pairs"].label
        '2N'
    """
    register = register_in(TASK_BUILDERS, "task builder", name)

    def decorate(builder: TaskBuilder) -> TaskBuilder:
        register(builder)
        if count is not None:
            TASK_SIZES[name] = TaskSize(count, label)
        return builder

    return decorate


def register_stop(name: str) -> Callable[[StopCondition], StopCondition]:
    """Register a loop stop condition ``(state) -> bool`` (True ends the loop)."""
    return register_in(STOP_CONDITIONS, "stop condition", name)


def ensure_builtins() -> None:
    """Load the built-in node types, task builders and stop conditions."""
    importlib.import_module("tmas.graphs.builtin")


def load_plugin(module: str) -> None:
    """Import a user module so that its ``register_*`` calls take effect.

    Example:
        >>> load_plugin("no_such_plugin")
        Traceback (most recent call last):
        ...
        ValueError: cannot import plugin 'no_such_plugin': No module named 'no_such_plugin'
    """
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ValueError(f"cannot import plugin {module!r}: {exc}") from None
