"""Editing a topology from Python: a node put in after or before a named node (inside the
pipelined TMAS's candidate body too) runs where it was put; refused edits name the fix."""

from __future__ import annotations

from typing import Any

import pytest

import tmas
from tmas.graphs.bundled import load_bundled
from tmas.graphs.registry import register_node
from tmas.testing.fake_chat import ScriptedChatModel

PROBLEM = "What is 9 + 9?"
SMALL = {"n_candidates": 2, "n_verifications": 1, "max_iterations": 2}


@pytest.fixture
def counting(restored_registry: Any) -> Any:
    """A node type that counts its runs in ``extras``, keyed by the node's ``tag`` (and, in a
    candidate's chain, the candidate's index)."""

    @register_node("t_count", writes=("extras",))
    def make_count(ctx: Any, tag: str = "count") -> Any:
        def count(state: dict[str, Any]) -> dict[str, Any]:
            plans = state.get("plans") or []
            key = f"{tag}-{plans[0]['index']}" if len(plans) == 1 else tag
            seen = (state.get("extras") or {}).get(key, 0)
            return {"extras": {key: seen + 1}}

        return count

    return restored_registry


def test_a_node_put_in_after_and_before_runs_there(counting: Any) -> None:
    spec = (
        load_bundled("tmas_barrier")
        .with_node({"id": "after_vote", "type": "t_count", "params": {"tag": "after"}},
                   after="record_iteration")
        .with_node({"id": "before_banks", "type": "t_count", "params": {"tag": "before"}},
                   before="update_banks")
    )  # fmt: skip
    graph = tmas.build_graph(spec, llm=ScriptedChatModel(), config=SMALL)
    state = graph.invoke({"problem": PROBLEM})
    assert state["extras"]["after"] == 2 and state["extras"]["before"] == 2  # once an iteration
    assert len(state["history"]) == 2 and state["stop_reason"] == "max_iterations"


def test_a_node_put_in_a_pipeline_body_runs_once_per_candidate(counting: Any) -> None:
    spec = load_bundled("tmas").with_node(
        {"id": "check", "type": "t_count", "params": {"tag": "checked"}}, after="summarize"
    )
    body = spec.nodes[1].params["spec"]
    assert "check" in [node["id"] for node in body["nodes"]]
    state = tmas.build_graph(spec, llm=ScriptedChatModel(), config=SMALL).invoke(
        {"problem": PROBLEM}
    )
    assert len(state["history"]) == 2
    assert {k: v for k, v in state["extras"].items() if k.startswith("checked")} == {
        "checked-0": 1,
        "checked-1": 1,
    }  # each candidate's chain ran it (an iteration's chains start without the run's extras)


@pytest.mark.parametrize(
    ("edit", "error", "message"),
    [
        ({"after": "nowhere"}, KeyError, "no node 'nowhere'"),
        ({"after": "verify", "before": "verify"}, ValueError, "give one of after= and before="),
        ({"before": "verify"}, ValueError, "fed by a fan-out from 'solve'"),
        ({"after": "verify", "id": "solve"}, ValueError, "node id 'solve' is taken"),
    ],
)
def test_edits_that_cannot_work_are_refused(
    counting: Any, edit: dict[str, str], error: type, message: str
) -> None:
    node = {"id": edit.pop("id", "new"), "type": "t_count"}
    with pytest.raises(error, match=message):
        load_bundled("tmas").with_node(node, **edit)
