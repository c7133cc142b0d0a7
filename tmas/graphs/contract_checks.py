"""Checking the node contract before anything runs: every state channel a node or a fan-out
names exists, and every field a (possibly overridden) template names is given to the node that
renders it, by its task, by the channels its fan-out hands over, or by the node itself."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from tmas.graphs.pipeline import bodies
from tmas.graphs.registry import NodeType
from tmas.graphs.spec import FanOut, GraphSpec, NodeSpec
from tmas.nodes.channels import RUN_STATE_KEYS
from tmas.nodes.parameters import with_defaults
from tmas.nodes.prompts import template_fields, template_key
from tmas.registration import registry

ANY_PROMPT = "*"
FANOUT_FIELDS = {"over": ("problem", "iteration", "item", "index"), "copies": ("problem",
                 "iteration", "copy")}  # fmt: skip


@dataclass
class ContractReport:
    """What the checks found, and which templates some node renders (an override of one no
    node renders is checked against the built-in template instead)."""

    problems: list[str] = field(default_factory=list)
    rendered: set[str] = field(default_factory=set)


def task_fields(fanout: FanOut | None, state_keys: Collection[str]) -> set[str] | None:
    """The fields a node's input carries: its fan-out's tasks (a builder's declared fields, or
    None when it declares none), plus what ``with`` hands over; the whole state without one.

    Example:
        >>> sorted(task_fields(FanOut(copies=2, **{"with": {"note": "notes"}}), []))
        ['copy', 'iteration', 'note', 'problem']
    """
    if fanout is None:
        return set(state_keys)
    if fanout.tasks is not None:
        entry = registry().tasks.get(fanout.tasks)
        if entry is None or entry.fields is None:
            return None
        given = set(entry.fields)
    else:
        given = set(FANOUT_FIELDS["over" if fanout.over is not None else "copies"])
    return given | set(fanout.with_)


def rendered_key(node: NodeSpec, node_type: NodeType, name: str, templates: Mapping[str, str]):
    """The key of the template a node renders as ``name``: a name with a ``/`` is an exact
    key, its ``{param}`` parts filled from the node's parameters (``mas/{agent}``); any other
    is looked up in the node's role's namespace, then its type's group's.

    Example:
        >>> node = NodeSpec(id="critic", type="text_agent", params={"agent": "critic"})
        >>> rendered_key(node, registry().nodes["text_agent"], "mas/{agent}", {})
        'mas/critic'
    """
    if "/" in name:
        try:
            return name.format(**with_defaults(node_type.factory, node.params))
        except (KeyError, IndexError, ValueError):
            return name
    role = node.role or node_type.role or "solver"
    return template_key(role, node_type.prompt_group, name, templates)


def _rendered(node: NodeSpec, node_type: NodeType, templates: Mapping[str, str]) -> dict:
    """Each template the node renders, by key, with the fields the node computes for it
    (templates the run lacks included: the caller names them)."""
    role = node.role or node_type.role or "solver"
    group = node_type.prompt_group
    found = {}
    for name, computed in node_type.prompts.items():
        if name != ANY_PROMPT:
            found[rendered_key(node, node_type, name, templates)] = set(computed)
    if ANY_PROMPT in node_type.prompts:
        for key in templates:
            prefix, _, name = key.partition("/")
            if prefix in (role, group) and name not in node_type.prompts:
                found.setdefault(key, set(node_type.prompts[ANY_PROMPT]))
    return found


def _node_problems(
    spec: GraphSpec,
    node: NodeSpec,
    templates: Mapping[str, str],
    channels: Collection[str],
    report: ContractReport,
) -> None:
    node_type = registry().nodes.get(node.type)
    if node_type is None:
        return
    for name in (*node_type.reads, *node_type.writes):
        if name not in RUN_STATE_KEYS and name not in channels:
            report.problems.append(
                f"node {node.id} ({node.type}) uses channel {name!r}, which neither the spec's "
                "channels: block nor a plugin declares"
            )
    entries = [e.fanout for e in spec.edges if node.id in e.targets and e.fanout is not None]
    inputs = [task_fields(fanout, [*RUN_STATE_KEYS, *channels]) for fanout in entries or [None]]
    for key, computed in _rendered(node, node_type, templates).items():
        if key not in templates:
            group = key.partition("/")[0]
            known = sorted(k for k in templates if k.startswith(f"{group}/"))
            report.problems.append(
                f"node {node.id} ({node.type}) renders prompts.{key}, which the run has no "
                f"template of ({group} has: {', '.join(known) or 'none'}; add it under prompts: "
                "or register it)"
            )
            continue
        report.rendered.add(key)
        used = template_fields(templates[key])
        for given in inputs:
            if given is None:
                continue
            if missing := sorted(used - given - computed):
                have = ", ".join(sorted(given | computed))
                report.problems.append(
                    f"prompts.{key} uses {{{'}, {'.join(missing)}}}, which it is not given at "
                    f"node {node.id} (it has: {have}; a fan-out's with: can add a channel)"
                )


def contract_problems(
    spec: GraphSpec, templates: Mapping[str, str], channels: Collection[str]
) -> ContractReport:
    """What breaks the node contract in ``spec`` and its pipeline bodies, given the run's
    ``templates`` and state ``channels``.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.nodes.prompts import builtin_templates
        >>> templates = {**builtin_templates(), "verifier/user": "{solution} {critique}"}
        >>> contract_problems(load_bundled("tmas_barrier"), templates, []).problems[0][:48]
        'prompts.verifier/user uses {critique}, which it '
    """
    report = ContractReport()
    for edge in spec.edges:
        for name in edge.fanout.with_.values() if edge.fanout is not None else ():
            if name not in channels and name not in RUN_STATE_KEYS:
                report.problems.append(
                    f"edge from {edge.source}: with: names channel {name!r}, which neither the "
                    "spec's channels: block nor a plugin declares"
                )
    for node in spec.nodes:
        _node_problems(spec, node, templates, channels, report)
    for body in bodies(spec).values():
        inner = contract_problems(body, templates, channels)
        report.problems += [f"body {body.name!r}: {problem}" for problem in inner.problems]
        report.rendered |= inner.rendered
    return report
