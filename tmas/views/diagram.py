"""Mermaid diagrams of topology specs, drawn offline from the spec itself."""

from __future__ import annotations

from tmas.graphs.bundled import bundled_names, load_bundled
from tmas.graphs.spec import END, START, GraphSpec
from tmas.views.diagram_layout import fanout_targets, node_label, spec_arcs


def _node_line(node_id: str, label: str, shape: str) -> str:
    left, right = {"round": ("([", "])"), "box": ("[", "]"), "fan": ("[[", "]]")}[shape]
    return f'    {node_id}{left}"{label}"{right}'


def spec_to_mermaid(spec: GraphSpec) -> str:
    """A Mermaid flowchart: fan-outs as dotted arrows into double-bordered nodes, loops as
    labelled back arrows with their exit.

    Example:
        >>> print(spec_to_mermaid(load_bundled("majority_vote")).splitlines()[0])
        flowchart TD
    """
    fanned = fanout_targets(spec)
    lines = ["flowchart TD", _node_line(START, "START", "round"), _node_line(END, "END", "round")]
    for node in spec.nodes:
        lines.append(_node_line(node.id, node_label(node), "fan" if node.id in fanned else "box"))
    for arc in spec_arcs(spec):
        if arc.kind in ("loop", "exit"):
            lines.append(f'    {arc.source} -- "{arc.label}" --> {arc.target}')
        elif arc.kind == "fanout":
            lines.append(f'    {arc.source} -. "{arc.label}" .-> {arc.target}')
        else:
            lines.append(f"    {arc.source} --> {arc.target}")
    return "\n".join(lines) + "\n"


def topology_docs() -> str:
    """The Markdown page listing every bundled topology with its diagram.

    ``python -m tmas.views.diagram > docs/topologies.md`` regenerates it; a test keeps the
    committed page in step with the bundled specs.
    """
    parts = [
        "# Bundled topologies\n",
        "Generated from `tmas/graphs/specs/` by `python -m tmas.views.diagram`. "
        "Dotted arrows are fan-outs (one LangGraph `Send` per task) into double-bordered "
        "nodes; a labelled back arrow is a loop with its stop condition.\n",
    ]
    for name in bundled_names():
        spec = load_bundled(name)
        parts.append(f"## {name}\n\n{spec.description}\n\n```mermaid\n{spec_to_mermaid(spec)}```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(topology_docs(), end="")
