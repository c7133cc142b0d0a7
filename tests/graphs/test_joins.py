"""Plain edges from several parallel branches into one node make it wait for all of them: it
runs once, after the longest branch, in every pass of a loop."""

from __future__ import annotations

from typing import Any

import pytest

from tmas.api import build_graph
from tmas.config import TMASConfig
from tmas.graphs.registry import register_node, register_stop
from tmas.graphs.spec import SpecError, parse_spec
from tmas.graphs.validate import plain_sources, validate_spec
from tmas.llm.router import ModelRouter
from tmas.testing.fake_chat import ScriptedChatModel


@register_node("test_visit")
def _visit(ctx: Any, name: str = "") -> Any:
    return lambda state: {"visits": [name]}


@register_stop("test_two_passes")
def _two_passes(state: dict[str, Any]) -> bool:
    return state.get("visits", []).count("d") >= 2


def visit(node_id: str) -> dict[str, Any]:
    return {"id": node_id, "type": "test_visit", "params": {"name": node_id}}


UNEQUAL_BRANCHES = {
    "name": "unequal_branches",
    "channels": {"visits": {"reducer": "append"}},  # each visit appended, in order
    "nodes": [visit(n) for n in ("a", "b", "c1", "c2", "c3", "d")],
    "edges": [
        {"from": "START", "to": "a"},
        {"from": "a", "to": ["b", "c1"]},
        {"from": "c1", "to": "c2"},
        {"from": "c2", "to": "c3"},
        {"from": "b", "to": "d"},
        {"from": "c3", "to": "d"},
        {"from": "d", "to": "END"},
    ],
}


def run(spec: dict[str, Any]) -> list[str]:
    graph = build_graph(parse_spec(spec), llm=ModelRouter(ScriptedChatModel()), config=TMASConfig())
    return graph.invoke({"problem": "p"})["visits"]


def test_a_node_after_branches_of_unequal_length_runs_once_after_all() -> None:
    visits = run(UNEQUAL_BRANCHES)
    assert visits.count("d") == 1
    assert visits[-1] == "d"
    assert visits.index("d") > visits.index("c3") and visits.index("d") > visits.index("b")


def test_the_join_waits_again_in_every_pass_of_a_loop() -> None:
    looped = {
        **UNEQUAL_BRANCHES,
        "edges": [
            *UNEQUAL_BRANCHES["edges"][:-1],
            {"from": "d", "to": "a", "until": "test_two_passes"},
        ],
    }
    visits = run(looped)
    assert visits.count("d") == 2 and visits.count("a") == 2
    first, second = visits[: visits.index("d") + 1], visits[visits.index("d") + 1 :]
    for one_pass in (first, second):
        assert sorted(one_pass) == ["a", "b", "c1", "c2", "c3", "d"]
        assert one_pass[-1] == "d"


def test_plain_sources_lists_each_join() -> None:
    assert plain_sources(parse_spec(UNEQUAL_BRANCHES))["d"] == ["b", "c3"]


def test_a_join_with_start_is_rejected() -> None:
    spec = {
        "name": "start_join",
        "nodes": [visit("a"), visit("b")],
        "edges": [
            {"from": "START", "to": ["a", "b"]},
            {"from": "a", "to": "b"},
            {"from": "b", "to": "END"},
        ],
    }
    with pytest.raises(SpecError, match="a join cannot include START"):
        validate_spec(parse_spec(spec))


def test_a_join_of_sources_in_and_out_of_its_loop_is_rejected() -> None:
    spec = {
        "name": "half_looped_join",
        "nodes": [visit(n) for n in ("a", "b", "c", "d")],
        "edges": [
            {"from": "START", "to": "a"},
            {"from": "a", "to": ["b", "c"]},
            {"from": "b", "to": "d"},
            {"from": "c", "to": "d"},
            {"from": "d", "to": "c", "until": "test_two_passes"},  # c and d loop; b runs once
        ],
    }
    with pytest.raises(SpecError, match="node d joins c .in its loop. with b .outside it."):
        validate_spec(parse_spec(spec))
