"""The registries with the built-in pieces loaded: importing this module registers the
built-in node types and task builders (``builtin``, ``builtin_chains``, ``builtin_pipeline``;
the built-in planners, stop conditions and selection rules register themselves in
:mod:`tmas.nodes.control`), so the tables it exports know every built-in name. Plugins add
theirs through :mod:`tmas.graphs.registry` (or the public :mod:`tmas.plugin`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tmas.graphs import builtin, builtin_chains, builtin_pipeline
from tmas.graphs.pipeline import bodies
from tmas.graphs.plugin_files import load_plugin, module_of, plugin_of
from tmas.graphs.registry import (
    NODE_TYPES,
    PLANNERS,
    SELECTION_RULES,
    STOP_CONDITIONS,
    TASK_BUILDERS,
    TASK_SIZES,
)

BUILTIN_MODULES = (builtin, builtin_chains, builtin_pipeline)
"""The modules whose import registered the built-in node types and task builders."""

__all__ = [
    "BUILTIN_MODULES",
    "NODE_TYPES",
    "PLANNERS",
    "SELECTION_RULES",
    "STOP_CONDITIONS",
    "TASK_BUILDERS",
    "TASK_SIZES",
    "registrations_used",
    "run_plugins",
]


def registrations_used(spec: Any) -> list[Any]:
    """What ``spec`` uses of the registries: node factories, task builders, planners,
    selection rules and stop conditions named by it or its pipelines' bodies (unknown names
    left out)."""
    used: list[Any] = []
    for node in spec.nodes:
        used.append(getattr(NODE_TYPES.get(node.type), "factory", None))
        used.append(getattr(PLANNERS.get(str(node.params.get("planner", ""))), "plan", None))
        used.append(SELECTION_RULES.get(str(node.params.get("selection", ""))))
    for edge in spec.edges:
        used += [STOP_CONDITIONS.get(name) for name in edge.conditions]
        if edge.fanout is not None and edge.fanout.tasks:
            used.append(TASK_BUILDERS.get(edge.fanout.tasks))
    for body in bodies(spec).values():
        used += registrations_used(body)
    return [item for item in used if item is not None]


def run_plugins(spec: Any, plugins: Sequence[str] = ()) -> list[str]:
    """The plugins a run of ``spec`` saves: those named (loaded, as :func:`load_plugin`
    returns them), then the modules of any other registration the spec uses, so a resume
    finds them all even when a caller imported a plugin by hand.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> run_plugins(load_bundled("tmas"), ["tmas.roles"])
        ['tmas.roles']
    """
    refs = [load_plugin(ref) for ref in plugins]
    covered = {getattr(module_of(ref), "__name__", None) for ref in refs}
    for item in registrations_used(spec):
        module = getattr(item, "__module__", None)
        if module in covered or (ref := plugin_of(item)) is None:
            continue
        covered.add(module)
        refs.append(ref)
    return list(dict.fromkeys(refs))
