"""Checking the node contract before anything runs: every state channel a node or a fan-out
names exists, and every field a (possibly overridden) template names is given to the node that
renders it, by its task, by the channels its fan-out hands over, or by the node itself."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from tmas.graphs.catalog import NODE_TYPES, TASK_FIELDS
from tmas.graphs.pipeline import bodies
from tmas.graphs.registry import NodeType
from tmas.graphs.spec import FanOut, GraphSpec, NodeSpec
from tmas.nodes.channels import RUN_STATE_KEYS
from tmas.nodes.prompts import template_fields, template_key

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
        if fanout.tasks not in TASK_FIELDS:
            return None
        given = set(TASK_FIELDS[fanout.tasks])
    else:
        given = set(FANOUT_FIELDS["over" if fanout.over is not None else "copies"])
    return given | set(fanout.with_)


def _rendered(node: NodeSpec, node_type: NodeType, templates: Mapping[str, str]) -> dict:
    """Each template the node renders, by key, with the fields the node computes for it."""
    role = node.role or node_type.role or "solver"
    group = node_type.prompt_group
    found = {}
    for name, computed in node_type.prompts.items():
        if name != ANY_PROMPT:
            found[template_key(role, group, name, templates)] = set(computed)
    if ANY_PROMPT in node_type.prompts:
        for key in templates:
            prefix, _, name = key.partition("/")
            if prefix in (role, group) and name not in node_type.prompts:
                found.setdefault(key, set(node_type.prompts[ANY_PROMPT]))
    return {key: computed for key, computed in found.items() if key in templates}


def _node_problems(
    spec: GraphSpec,
    node: NodeSpec,
    templates: Mapping[str, str],
    channels: Collection[str],
    report: ContractReport,
) -> None:
    node_type = NODE_TYPES.get(node.type)
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
