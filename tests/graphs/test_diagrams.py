"""The Mermaid diagrams of the bundled topologies, and the docs page that shows them."""

from __future__ import annotations

from pathlib import Path

from tmas.graphs.bundled import bundled_names, load_bundled
from tmas.graphs.pipeline import bodies
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
        inner = bodies(spec)
        for node in spec.nodes:
            drawn = f"    subgraph {node.id}[" if node.id in inner else f"    {node.id}["
            assert drawn in text, (name, node.id)
        for pipeline, body in inner.items():
            for node in body.nodes:
                assert f"        {pipeline}__{node.id}[" in text, (name, pipeline, node.id)
        arrows = sum(1 for line in text.splitlines() if "-->" in line or ".->" in line)
        edges = spec.edges + [e for body in inner.values() for e in body.edges]
        expected = sum(2 if e.until else len(e.targets) for e in edges)
        assert arrows == expected, name


def test_every_fanout_label_says_how_many_tasks_it_sends() -> None:
    text = spec_to_ascii(load_bundled("tmas_barrier"))
    assert "==> verify  (fan-out: verification_tasks, N x M tasks)" in text
    assert "[xN]" not in text
    assert "fan-out x3" in spec_to_ascii(load_bundled("delm"))


def test_fanouts_and_loops_are_visible() -> None:
    text = spec_to_mermaid(load_bundled("tmas_barrier"))
    assert 'candidates_ready -. "fan-out: verification_tasks, N x M tasks" .-> verify' in text
    assert 'start_iteration -. "fan-out: solver_tasks, N tasks" .-> solve' in text
    assert "    verify[[" in text  # fan-out targets are double-bordered
    assert 'record_iteration -- "loop until not run_finished" --> start_iteration' in text
    assert 'record_iteration -- "run_finished" --> END' in text


def test_a_pipeline_is_a_mermaid_subgraph_with_its_body_inside() -> None:
    text = spec_to_mermaid(load_bundled("tmas"))
    assert '    subgraph candidate["candidate: pipeline"]' in text
    assert 'start_iteration -. "fan-out: candidate_tasks, N tasks" .-> candidate' in text
    fanout = 'candidate__solve -. "fan-out: verification_tasks, N x M tasks" .-> candidate__verify'
    assert f"        {fanout}" in text
    assert "    candidate --> update_banks" in text
