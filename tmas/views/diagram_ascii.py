"""Plain-text diagrams of topology specs: nodes by layer, each node's arrows listed under it."""

from __future__ import annotations

import textwrap

from tmas.graphs.spec import END, START, GraphSpec
from tmas.views.diagram_layout import (
    Arc,
    body_caption,
    fanout_targets,
    layers,
    node_label,
    pipeline_bodies,
    spec_arcs,
)

LEGEND = (
    "legend: [node]  [[runs once per fan-out task]]  (START/END)\n"
    "        -->  next    ==>  fan-out (how many tasks it sends)\n"
    "        <--  loop back while the condition is false    --> EXIT  leave the loop"
)


def ascii_only(text: str) -> str:
    """``text`` with every non-ASCII character replaced by ``?``.

    Example:
        >>> ascii_only("N × M")
        'N ? M'
    """
    return text.encode("ascii", "replace").decode("ascii")


def _box(node_id: str, label: str, fanned: set[str]) -> str:
    if node_id in (START, END):
        return f"({node_id})"
    return f"[[{label}]]" if node_id in fanned else f"[{label}]"


def _arc_line(arc: Arc) -> str:
    if arc.kind == "fanout":
        return f"==> {arc.target}  ({arc.label})"
    if arc.kind == "loop":
        return f"<-- {arc.label}: back to {arc.target}"
    if arc.kind == "exit":
        return f"--> EXIT when {arc.label}: {arc.target}"
    return f"--> {arc.target}"


def spec_to_ascii(spec: GraphSpec) -> str:
    """The topology as plain ASCII text: a header, then each layer's nodes with their arrows.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> text = spec_to_ascii(load_bundled("majority_vote"))
        >>> for line in text.splitlines()[-7:]:
        ...     print(line)
        layer 3
          [record_iteration]
              <-- loop until not run_finished: back to start_iteration
              --> EXIT when run_finished: END
        <BLANKLINE>
        layer 4
          (END)
    """
    lines = [f"topology: {spec.name}"]
    if spec.description:
        lines += textwrap.wrap(spec.description, 78, initial_indent="  ", subsequent_indent="  ")
    lines += ["", LEGEND]
    if pipeline_bodies(spec):
        lines.append("        { ... }  a pipeline's body, under its node")
    return ascii_only("\n".join(lines + _layer_lines(spec, "")) + "\n")


def _layer_lines(spec: GraphSpec, indent: str) -> list[str]:
    """Each layer's nodes with their arrows; a pipeline's body drawn the same way under it."""
    fanned = fanout_targets(spec)
    inner = pipeline_bodies(spec)
    labels = {node.id: node_label(node) for node in spec.nodes}
    by_source: dict[str, list[Arc]] = {}
    for arc in spec_arcs(spec):
        by_source.setdefault(arc.source, []).append(arc)
    lines = []
    for depth, layer in enumerate(layers(spec)):
        lines += ["", f"{indent}layer {depth}"]
        for node_id in layer:
            lines.append(f"{indent}  " + _box(node_id, labels.get(node_id, node_id), fanned))
            if node_id in inner:
                body = inner[node_id]
                lines.append(f"{indent}      {{ {body_caption(body)}")
                lines += _layer_lines(body, indent + "        ")[1:]
                lines.append(f"{indent}      }}")
            lines.extend(f"{indent}      " + _arc_line(arc) for arc in by_source.get(node_id, []))
    return lines
