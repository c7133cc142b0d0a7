"""Builders of small topology specs and of the errors they raise, for the spec tests."""

from typing import Any

import pytest

from tmas.graphs.spec import SpecError, parse_spec
from tmas.graphs.validate import validate_spec


def node(node_id: str, node_type: str = "join", **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "type": node_type, **extra}


def edge(source: str, target: str | list[str], **extra: Any) -> dict[str, Any]:
    return {"from": source, "to": target, **extra}


def spec_of(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "case", "nodes": nodes, "edges": edges}


def problems_of(data: Any) -> list[str]:
    """The problems ``parse_spec`` + ``validate_spec`` report (the test fails if none)."""
    with pytest.raises(SpecError) as caught:
        validate_spec(parse_spec(data))
    problems = caught.value.problems
    assert problems, "a SpecError must list at least one problem"
    for problem in problems:
        assert problem in str(caught.value)
    return problems


def only_problem(data: Any) -> str:
    problems = problems_of(data)
    assert len(problems) == 1, problems
    return problems[0]


def one_line(text: str) -> str:
    return " ".join(text.split())


# A small valid topology the cases below break one way each.
VALID = spec_of(
    [node("a"), node("b")],
    [edge("START", "a"), edge("a", "b"), edge("b", "END")],
)
