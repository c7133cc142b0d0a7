"""Graphviz DOT text of topology specs, written by hand (no graphviz package needed)."""

from __future__ import annotations

from tmas.graphs.spec import END, START, GraphSpec
from tmas.views.diagram_layout import (
    Arc,
    body_caption,
    fanout_targets,
    nested_id,
    node_label,
    pipeline_bodies,
    spec_arcs,
)

_LOOP_COLOR = ['color="#b03030"', 'fontcolor="#b03030"']
_ARC_STYLES = {
    "plain": [],
    "fanout": ["style=dashed"],
    "loop": [*_LOOP_COLOR, "constraint=false"],
    "exit": _LOOP_COLOR,
}


def dot_quote(text: str) -> str:
    """A DOT string literal.

    Example:
        >>> print(dot_quote('say "hi"'))
        "say \\"hi\\""
    """
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _arc_line(arc: Arc, source: str, target: str, extra: list[str], indent: str) -> str:
    attrs = _ARC_STYLES[arc.kind] + ([f"label={dot_quote(arc.label)}"] if arc.label else [])
    attrs += extra
    suffix = f" [{', '.join(attrs)}]" if attrs else ""
    return f"{indent}{dot_quote(source)} -> {dot_quote(target)}{suffix};"


def _round(node_id: str, label: str, indent: str) -> str:
    return (
        f"{indent}{dot_quote(node_id)} [label={dot_quote(label)}, shape=ellipse, style=filled, "
        'fillcolor="#e8e8e8"];'
    )


def _body_lines(spec: GraphSpec, prefix: str, indent: str) -> list[str]:
    """The nodes and arcs of ``spec`` (a pipeline's body when ``prefix`` names it, drawn in a
    cluster; arcs into and out of a pipeline meet its body's START and END)."""
    fanned = fanout_targets(spec)
    inner = pipeline_bodies(spec)

    def qualified(node_id: str) -> str:
        return nested_id(prefix, node_id) if prefix else node_id

    lines = []
    if prefix:
        lines += [_round(qualified(START), START, indent), _round(qualified(END), END, indent)]
    for node in spec.nodes:
        if node.id in inner:
            cluster = f"cluster_{qualified(node.id)}"
            caption = f"{node_label(node)}\n{body_caption(inner[node.id])}"
            lines.append(f"{indent}subgraph {dot_quote(cluster)} {{")
            lines.append(f'{indent}  label={dot_quote(caption)}; style="rounded,dashed";')
            lines += _body_lines(inner[node.id], qualified(node.id), indent + "  ")
            lines.append(f"{indent}}}")
            continue
        extra = ", peripheries=2" if node.id in fanned else ""
        label = dot_quote(node_label(node))
        lines.append(f"{indent}{dot_quote(qualified(node.id))} [label={label}{extra}];")
    for arc in spec_arcs(spec):
        source, target, extra = qualified(arc.source), qualified(arc.target), []
        if arc.source in inner:
            source = nested_id(source, END)
            extra.append(f"ltail={dot_quote('cluster_' + qualified(arc.source))}")
        if arc.target in inner:
            target = nested_id(target, START)
            extra.append(f"lhead={dot_quote('cluster_' + qualified(arc.target))}")
        lines.append(_arc_line(arc, source, target, extra, indent))
    return lines


def spec_to_dot(spec: GraphSpec) -> str:
    """A DOT digraph: START and END round, fan-outs dashed and labelled into double-bordered
    nodes, a loop's back arc labelled ``loop until not COND`` and its exit labelled ``COND``,
    a pipeline as a cluster holding its body.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> text = spec_to_dot(load_bundled("majority_vote"))
        >>> print([line for line in text.splitlines() if "fan-out" in line][0])
          "start_iteration" -> "solve" [style=dashed, label="fan-out: solver_tasks, N tasks"];
    """
    compound = ", compound=true" if pipeline_bodies(spec) else ""
    lines = [
        f"digraph {dot_quote(spec.name)} {{",
        f"  graph [rankdir=TB, label={dot_quote(spec.name)}, labelloc=t, fontname=Helvetica"
        f"{compound}];",
        "  node [shape=box, style=rounded, fontname=Helvetica];",
        "  edge [fontname=Helvetica, fontsize=10];",
        f'  {dot_quote(START)} [shape=ellipse, style=filled, fillcolor="#e8e8e8"];',
        f'  {dot_quote(END)} [shape=ellipse, style=filled, fillcolor="#e8e8e8"];',
        *_body_lines(spec, "", "  "),
        "}",
    ]
    return "\n".join(lines) + "\n"
