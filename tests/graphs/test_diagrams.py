"""The Mermaid diagrams of the bundled topologies, and the docs page that shows them."""

from __future__ import annotations

from pathlib import Path

from tmas.graphs.bundled import bundled_names, load_bundled
from tmas.views.diagram import spec_to_mermaid, topology_docs
from tmas.views.diagram_ascii import spec_to_ascii

DOCS = Path(__file__).resolve().parents[2] / "docs" / "topologies.md"


def test_docs_page_is_in_step_with_the_bundled_specs() -> None:
    assert DOCS.read_text(encoding="utf-8") == topology_docs(), (
        "regenerate with: python -m tmas.views.diagram > docs/topologies.md"
    )


def test_every_node_and_arc_of_a_spec_is_drawn() -> None:
    for name in bundled_names():
        spec = load_bundled(name)
        text = spec_to_mermaid(spec)
        for node in spec.nodes:
            assert f"    {node.id}[" in text, (name, node.id)
        arrows = sum(1 for line in text.splitlines() if "-->" in line or ".->" in line)
        expected = sum(2 if e.until else len(e.targets) for e in spec.edges)
        assert arrows == expected, name


def test_every_fanout_label_says_how_many_tasks_it_sends() -> None:
    text = spec_to_ascii(load_bundled("tmas"))
    assert "==> verify  (fan-out: verification_tasks, N x M tasks)" in text
    assert "[xN]" not in text
    assert "fan-out x3" in spec_to_ascii(load_bundled("delm"))


def test_fanouts_and_loops_are_visible() -> None:
    text = spec_to_mermaid(load_bundled("tmas"))
    assert 'candidates_ready -. "fan-out: verification_tasks, N x M tasks" .-> verify' in text
    assert 'start_iteration -. "fan-out: solver_tasks, N tasks" .-> solve' in text
    assert "    verify[[" in text  # fan-out targets are double-bordered
    assert 'record_iteration -- "loop until not run_finished" --> start_iteration' in text
    assert 'record_iteration -- "run_finished" --> END' in text
