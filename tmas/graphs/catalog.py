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
    TASK_FIELDS,
    TASK_SIZES,
)
from tmas.memory.similarity import SIMILARITIES
from tmas.nodes.channels import CHANNELS, RUN_STATE_KEYS, ChannelSpec, channel_spec

BUILTIN_MODULES = (builtin, builtin_chains, builtin_pipeline)
"""The modules whose import registered the built-in node types and task builders."""

__all__ = [
    "BUILTIN_MODULES",
    "NODE_TYPES",
    "PLANNERS",
    "SELECTION_RULES",
    "STOP_CONDITIONS",
    "TASK_BUILDERS",
    "TASK_FIELDS",
    "TASK_SIZES",
    "channel_names",
    "registrations_used",
    "run_plugins",
    "spec_channels",
]


def registrations_used(spec: Any) -> list[Any]:
    """What ``spec`` uses of the registries: node factories, task builders, planners,
    selection rules and stop conditions named by it or its pipelines' bodies, and the
    similarities its ``config:`` block names (unknown names left out)."""
    used: list[Any] = [
        SIMILARITIES.get(str(spec.config.get(field, "")))
        for field in ("similarity", "memory_similarity")
    ]
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


def channel_names(spec: Any) -> list[str]:
    """The state channels ``spec`` (or a pipeline body of it) names: those its node types read
    or write and those its fan-outs hand to tasks (``with``), keys of the run's own state left
    out.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> channel_names(load_bundled("tmas"))
        []
    """
    names: list[str] = []
    for node in spec.nodes:
        node_type = NODE_TYPES.get(node.type)
        if node_type is not None:
            names += [*node_type.reads, *node_type.writes]
    for edge in spec.edges:
        if edge.fanout is not None:
            names += list(edge.fanout.with_.values())
    for body in bodies(spec).values():
        names += channel_names(body)
    return [name for name in dict.fromkeys(names) if name not in RUN_STATE_KEYS]


def spec_channels(spec: Any) -> dict[str, ChannelSpec]:
    """The channels a run of ``spec`` has: those its ``channels:`` block declares, then the
    registered ones it names (:func:`channel_names`); a name neither declares is left for the
    validator to refuse.

    Example:
        >>> from tmas.graphs.spec import parse_spec
        >>> spec = parse_spec({"name": "x", "channels": {"marks": {"reducer": "keyed"}},
        ...                    "nodes": [], "edges": []})
        >>> spec_channels(spec)["marks"].reducer
        'keyed'
    """
    found = {name: channel_spec(name, **decl.model_dump()) for name, decl in spec.channels.items()}
    for name in channel_names(spec):
        if name not in found and name in CHANNELS:
            found[name] = CHANNELS[name]
    return found
