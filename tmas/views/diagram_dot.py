"""Graphviz DOT text of topology specs, written by hand (no graphviz package needed)."""

from __future__ import annotations

from tmas.graphs.spec import END, START, GraphSpec
from tmas.views.diagram_layout import Arc, fanout_targets, node_label, spec_arcs

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


def _arc_line(arc: Arc) -> str:
    attrs = _ARC_STYLES[arc.kind] + ([f"label={dot_quote(arc.label)}"] if arc.label else [])
    suffix = f" [{', '.join(attrs)}]" if attrs else ""
    return f"  {dot_quote(arc.source)} -> {dot_quote(arc.target)}{suffix};"


def spec_to_dot(spec: GraphSpec) -> str:
    """A DOT digraph: START and END round, fan-outs dashed and labelled into double-bordered
    nodes, a loop's back arc labelled ``loop until not COND`` and its exit labelled ``COND``.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> text = spec_to_dot(load_bundled("majority_vote"))
        >>> print([line for line in text.splitlines() if "fan-out" in line][0])
          "start_iteration" -> "solve" [style=dashed, label="fan-out: solver_tasks, N tasks"];
    """
    fanned = fanout_targets(spec)
    lines = [
        f"digraph {dot_quote(spec.name)} {{",
        f"  graph [rankdir=TB, label={dot_quote(spec.name)}, labelloc=t, fontname=Helvetica];",
        "  node [shape=box, style=rounded, fontname=Helvetica];",
        "  edge [fontname=Helvetica, fontsize=10];",
        f'  {dot_quote(START)} [shape=ellipse, style=filled, fillcolor="#e8e8e8"];',
        f'  {dot_quote(END)} [shape=ellipse, style=filled, fillcolor="#e8e8e8"];',
    ]
    for node in spec.nodes:
        extra = ", peripheries=2" if node.id in fanned else ""
        lines.append(f"  {dot_quote(node.id)} [label={dot_quote(node_label(node))}{extra}];")
    lines.extend(_arc_line(arc) for arc in spec_arcs(spec))
    lines.append("}")
    return "\n".join(lines) + "\n"
