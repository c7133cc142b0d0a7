"""What a topology uses of the registry (:func:`tmas.registration.registry`, whose constructor
loads the built-in node types, task builders, planners, stop conditions, selection rules,
channels, similarities, roles and prompts): the registrations its spec names, the plugins a
run of it must load, and the state channels it has."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tmas.graphs.pipeline import bodies
from tmas.graphs.plugin_files import load_plugin, module_of, plugin_of_module
from tmas.nodes.channels import BUILTIN_CHANNELS, RUN_STATE_KEYS, ChannelSpec, channel_spec
from tmas.registration import Entry, registry

__all__ = [
    "channel_names",
    "registrations_used",
    "run_plugins",
    "spec_channels",
]


def registrations_used(spec: Any) -> list[Entry[Any]]:
    """The registry entries ``spec`` uses: node types, task builders, planners, selection
    rules and stop conditions named by it or its pipelines' bodies, and the similarities its
    ``config:`` block names (unknown names left out).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> used = registrations_used(load_bundled("tmas"))
        >>> sorted({e.name for e in used if e.owner == "tmas.graphs.builtin"})[:3]
        ['extract_experience', 'extract_guideline', 'join']
    """
    found = registry()
    named: list[tuple[Any, str]] = [
        (found.similarities, str(spec.config.get(field, "")))
        for field in ("similarity", "memory_similarity")
    ]
    for node in spec.nodes:
        named.append((found.nodes, node.type))
        named.append((found.planners, str(node.params.get("planner", ""))))
        named.append((found.selections, str(node.params.get("selection", ""))))
    for edge in spec.edges:
        named += [(found.stops, name) for name in edge.conditions]
        if edge.fanout is not None and edge.fanout.tasks:
            named.append((found.tasks, edge.fanout.tasks))
    used = [table.entry(name) for table, name in named if name in table]
    for body in bodies(spec).values():
        used += registrations_used(body)
    return used


def run_plugins(spec: Any, plugins: Sequence[str] = ()) -> list[str]:
    """The plugins a run of ``spec`` saves: those named (loaded, as :func:`load_plugin`
    returns them), then the module of any other registration the spec uses that is a plugin's,
    so a resume finds them all even when a caller imported a plugin by hand.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> run_plugins(load_bundled("tmas"), ["tmas.roles"])
        ['tmas.roles']
    """
    refs = [load_plugin(ref) for ref in plugins]
    covered = {getattr(module_of(ref), "__name__", None) for ref in refs}
    owners = {entry.owner for entry in registrations_used(spec) if not entry.builtin}
    for owner in sorted(owners - covered):
        ref = plugin_of_module(owner)
        if ref is not None:
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
        node_type = registry().nodes.get(node.type)
        if node_type is not None:
            names += [*node_type.reads, *node_type.writes]
    for edge in spec.edges:
        if edge.fanout is not None:
            names += list(edge.fanout.with_.values())
    for body in bodies(spec).values():
        names += channel_names(body)
    return [name for name in dict.fromkeys(names) if name not in RUN_STATE_KEYS]


def spec_channels(spec: Any) -> dict[str, ChannelSpec]:
    """The channels a run of ``spec`` has: the built-in ones (``extras``), those its
    ``channels:`` block declares, then the registered ones it names (:func:`channel_names`); a
    name neither declares is left for the validator to refuse.

    Example:
        >>> from tmas.graphs.spec import parse_spec
        >>> spec = parse_spec({"name": "x", "channels": {"marks": {"reducer": "keyed"}},
        ...                    "nodes": [], "edges": []})
        >>> spec_channels(spec)["marks"].reducer
        'keyed'
    """
    found = dict(BUILTIN_CHANNELS)
    found.update(
        (name, channel_spec(name, **decl.model_dump())) for name, decl in spec.channels.items()
    )
    for name in channel_names(spec):
        if name not in found and name in registry().channels:
            found[name] = registry().channels[name]
    return found
