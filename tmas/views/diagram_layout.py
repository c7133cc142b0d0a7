"""What every diagram format shares: node labels, the arcs of a spec by kind, and layers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import networkx as nx

from tmas.graphs.pipeline import bodies
from tmas.graphs.spec import END, START, EdgeSpec, GraphSpec, NodeSpec
from tmas.graphs.validate import spec_digraph
from tmas.registration import registry

ArcKind = Literal["plain", "fanout", "loop", "exit"]


@dataclass(frozen=True)
class Arc:
    """One drawn arrow: ``loop`` goes back to the loop's start, ``exit`` leaves the loop."""

    source: str
    target: str
    kind: ArcKind
    label: str
    edge: EdgeSpec


def node_label(node: NodeSpec) -> str:
    """``id`` when the id names the type, else ``id: type``.

    Example:
        >>> node_label(NodeSpec(id="critique", type="verify"))
        'critique: verify'
    """
    return node.id if node.id == node.type else f"{node.id}: {node.type}"


def fanout_label(edge: EdgeSpec) -> str:
    """How a fan-out edge makes its tasks, and how many it sends.

    Example:
        >>> fanout_label(EdgeSpec.model_validate({"from": "a", "to": "b", "fanout": {"copies": 3}}))
        'fan-out x3'
        >>> fanout_label(EdgeSpec.model_validate({"from": "a", "to": "b", "fanout": {
        ...     "tasks": "verification_tasks", "with": {"critique": "critiques"}}}))
        'fan-out: verification_tasks, N x M tasks, with critique from critiques'
    """
    assert edge.fanout is not None
    if edge.fanout.tasks:
        label = f"fan-out: {edge.fanout.tasks}, {fanout_count(edge)} tasks"
    elif edge.fanout.over:
        label = f"fan-out over {edge.fanout.over}"
    else:
        label = f"fan-out x{edge.fanout.copies}"
    handed = [f"{field} from {channel}" for field, channel in edge.fanout.with_.items()]
    return label + (f", with {', '.join(handed)}" if handed else "")


def fanout_count(edge: EdgeSpec) -> str:
    """How many tasks a fan-out sends: the copies, the size its task builder registered (e.g.
    ``N x M``), ``len(LIST)`` for a fan-out over a state list, ``?`` when unknown.

    Example:
        >>> fanout_count(EdgeSpec.model_validate({"from": "a", "to": "b", "fanout": {"over": "x"}}))
        'len(x)'
        >>> fanout_count(EdgeSpec.model_validate({"from": "a", "to": "b",
        ...                                       "fanout": {"tasks": "verification_tasks"}}))
        'N x M'
    """
    assert edge.fanout is not None
    if edge.fanout.copies:
        return str(edge.fanout.copies)
    if edge.fanout.over:
        return f"len({edge.fanout.over})"
    entry = registry().tasks.get(edge.fanout.tasks or "")
    size = entry.size if entry is not None else None
    return size.label if size is not None else "?"


def loop_label(edge: EdgeSpec) -> str:
    """The label of a loop's back arc.

    Example:
        >>> loop_label(EdgeSpec.model_validate({"from": "a", "to": "b", "until": "done"}))
        'loop until not done'
    """
    conditions = edge.conditions
    if len(conditions) == 1:
        return f"loop until not {conditions[0]}"
    return f"loop until not ({' or '.join(conditions)})"


def spec_arcs(spec: GraphSpec) -> list[Arc]:
    """Every arrow of the spec in declaration order; a loop edge gives its back arc, then its exit.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> [(a.kind, a.target) for a in spec_arcs(load_bundled("majority_vote"))][-2:]
        [('loop', 'start_iteration'), ('exit', 'END')]
    """
    arcs = []
    for edge in spec.edges:
        if edge.until:
            assert isinstance(edge.target, str)
            arcs.append(Arc(edge.source, edge.target, "loop", loop_label(edge), edge))
            arcs.append(Arc(edge.source, edge.exit, "exit", " or ".join(edge.conditions), edge))
        elif edge.fanout:
            label = fanout_label(edge)
            arcs.extend(Arc(edge.source, t, "fanout", label, edge) for t in edge.targets)
        else:
            arcs.extend(Arc(edge.source, t, "plain", "", edge) for t in edge.targets)
    return arcs


def fanout_targets(spec: GraphSpec) -> set[str]:
    """The nodes that run once per fan-out task.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> sorted(fanout_targets(load_bundled("majority_vote")))
        ['solve']
    """
    return {t for e in spec.edges if e.fanout for t in e.targets}


def draw_order(spec: GraphSpec) -> list[str]:
    """START, the nodes in declaration order, END."""
    return [START, *spec.node_ids(), END]


def layers(spec: GraphSpec) -> list[list[str]]:
    """Nodes in topological layers, loop-back arcs ignored; declaration order within a layer.

    A cycle without a loop edge (an invalid spec) is broken at its last arc.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> layers(load_bundled("majority_vote"))
        [['START'], ['start_iteration'], ['solve'], ['record_iteration'], ['END']]
    """
    graph = spec_digraph(spec, with_loop_backs=False)
    while not nx.is_directed_acyclic_graph(graph):
        graph.remove_edge(*nx.find_cycle(graph)[-1][:2])
    rank = {node: i for i, node in enumerate(draw_order(spec))}
    return [
        sorted(layer, key=lambda n: (rank.get(n, len(rank)), n))
        for layer in nx.topological_generations(graph)
    ]


def pipeline_bodies(spec: GraphSpec) -> dict[str, GraphSpec]:
    """The body of each pipeline node, by node id: drawn nested inside that node.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> {k: v.name for k, v in pipeline_bodies(load_bundled("tmas")).items()}
        {'candidate': 'candidate_chain'}
    """
    return bodies(spec)


def nested_id(pipeline: str, node_id: str, separator: str = "/") -> str:
    """The drawn id of node ``node_id`` of pipeline ``pipeline``'s body (START and END too).

    Example:
        >>> nested_id("candidate", "solve"), nested_id("candidate", "END", "__")
        ('candidate/solve', 'candidate__END')
    """
    return f"{pipeline}{separator}{node_id}"


def body_caption(body: GraphSpec) -> str:
    """What a pipeline's cluster says about its body.

    Example:
        >>> body_caption(GraphSpec(name="chain", nodes=[], edges=[]))
        "pipeline chain: runs once per task (N inside: that task's candidates)"
    """
    return f"pipeline {body.name}: runs once per task (N inside: that task's candidates)"
