"""Mermaid diagrams of topology specs, drawn offline from the spec itself."""

from __future__ import annotations

from tmas.graphs.bundled import bundled_names, load_bundled
from tmas.graphs.spec import END, START, GraphSpec
from tmas.views.diagram_layout import (
    body_caption,
    fanout_targets,
    nested_id,
    node_label,
    pipeline_bodies,
    spec_arcs,
)


def _node_line(node_id: str, label: str, shape: str, indent: str = "    ") -> str:
    left, right = {"round": ("([", "])"), "box": ("[", "]"), "fan": ("[[", "]]")}[shape]
    return f'{indent}{node_id}{left}"{label}"{right}'


def spec_to_mermaid(spec: GraphSpec) -> str:
    """A Mermaid flowchart: fan-outs as dotted arrows into double-bordered nodes, loops as
    labelled back arrows with their exit, a pipeline as a subgraph holding its body.

    Example:
        >>> print(spec_to_mermaid(load_bundled("majority_vote")).splitlines()[0])
        flowchart TD
    """
    return "\n".join(["flowchart TD", *_mermaid_lines(spec, "", "    ")]) + "\n"


def _mermaid_lines(spec: GraphSpec, prefix: str, indent: str) -> list[str]:
    """The nodes and arrows of ``spec``, ids prefixed with ``prefix`` (a body's)."""
    fanned = fanout_targets(spec)
    inner = pipeline_bodies(spec)

    def qualified(node_id: str) -> str:
        return nested_id(prefix, node_id, "__") if prefix else node_id

    lines = [
        _node_line(qualified(START), "START", "round", indent),
        _node_line(qualified(END), "END", "round", indent),
    ]
    for node in spec.nodes:
        if node.id in inner:
            lines.append(f'{indent}subgraph {qualified(node.id)}["{node_label(node)}"]')
            lines.append(f"{indent}    %% {body_caption(inner[node.id])}")
            lines += _mermaid_lines(inner[node.id], qualified(node.id), indent + "    ")
            lines.append(f"{indent}end")
            continue
        shape = "fan" if node.id in fanned else "box"
        lines.append(_node_line(qualified(node.id), node_label(node), shape, indent))
    for arc in spec_arcs(spec):
        source, target = qualified(arc.source), qualified(arc.target)
        if arc.kind in ("loop", "exit"):
            lines.append(f'{indent}{source} -- "{arc.label}" --> {target}')
        elif arc.kind == "fanout":
            lines.append(f'{indent}{source} -. "{arc.label}" .-> {target}')
        else:
            lines.append(f"{indent}{source} --> {target}")
    return lines


def topology_docs() -> str:
    """The Markdown page listing every bundled topology with its diagram.

    ``python -m tmas.views.diagram > docs/topologies.md`` regenerates it; a test keeps the
    committed page in step with the bundled specs.
    """
    parts = [
        "# Bundled topologies\n",
        "Generated from `tmas/graphs/specs/` by `python -m tmas.views.diagram`. "
        "Dotted arrows are fan-outs (one LangGraph `Send` per task) into double-bordered "
        "nodes; a labelled back arrow is a loop with its stop condition. A pipeline node is "
        "a box holding its body: a chain that runs once per fan-out task, on its own, so only "
        "the nodes after the pipeline wait for all of them.\n",
    ]
    for name in bundled_names():
        spec = load_bundled(name)
        parts.append(f"## {name}\n\n{spec.description}\n\n```mermaid\n{spec_to_mermaid(spec)}```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(topology_docs(), end="")
