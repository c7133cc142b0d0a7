"""State channels of plugins and specs: their reducers, the per-iteration reset, fan-outs that
hand them to tasks, planners, stop conditions and selection rules that read them, and the
checks that refuse a channel or a template field nobody provides, before anything runs."""

from __future__ import annotations

from typing import Any

import pytest

import tmas
from tmas.graphs.registry import (
    PlanChoice,
    register_node,
    register_planner,
    register_selection,
    register_stop,
)
from tmas.graphs.spec import SpecError
from tmas.nodes.channels import ChannelSpec, register_channel
from tmas.testing.fake_chat import ScriptedChatModel

PROBLEM = "What is 9 + 9?"


@register_node("test_mark_iteration", writes=["marks", "log", "last"])
def _mark(ctx: Any) -> Any:
    def mark(state: dict[str, Any]) -> dict[str, Any]:
        n = state["iteration"]
        return {"marks": {str(n): f"seen {n}"}, "log": [f"it {n}"], "last": n}

    return mark


@register_planner("test_follow_last", modes=("marked",))
def _follow_last(request: Any) -> PlanChoice:
    """Mode ``marked`` when the previous iteration left a mark."""
    return PlanChoice("marked" if request.channels.get("marks") else "initial")


@register_stop("test_three_logged")
def _three_logged(state: dict[str, Any]) -> bool:
    return len(state.get("log") or []) >= 3


@register_selection("test_last_as_answer")
def _last_as_answer(record: Any, totals: Any, channels: Any) -> str:
    return f"last={channels['last']}"


def spec(**changes: Any) -> dict[str, Any]:
    return {
        "name": "channels",
        "config": {"max_iterations": 5, "n_candidates": 2},
        "channels": {
            "marks": {"reducer": "keyed", "per_iteration": True},
            "log": {"reducer": "append", "cap": 10},
            "last": {"reducer": "replace"},
        },
        "prompts": {"solver/marked": "Problem: {problem}\nMarks: {marks}\nSolve it."},
        "nodes": [
            {"id": "start", "type": "start_iteration", "params": {"planner": "test_follow_last"}},
            {"id": "solve", "type": "solve"},
            {"id": "mark", "type": "test_mark_iteration"},
            {
                "id": "record",
                "type": "record_iteration",
                "params": {"selection": "test_last_as_answer"},
            },  # fmt: skip
        ],
        "edges": [
            {"from": "START", "to": "start"},
            {
                "from": "start",
                "to": "solve",
                "fanout": {"tasks": "solver_tasks", "with": {"marks": "marks"}},
            },  # fmt: skip
            {"from": "solve", "to": "mark"},
            {"from": "mark", "to": "record"},
            {"from": "record", "to": "start", "until": ["run_finished", "test_three_logged"]},
        ],
        **changes,
    }


def test_channels_merge_reset_and_reach_planners_prompts_stop_rules_and_selection() -> None:
    model = ScriptedChatModel()
    graph = tmas.build_graph(spec(), llm=model)
    state = graph.invoke({"problem": PROBLEM})
    assert state["stop_reason"] == "test_three_logged"  # a stop condition read "log"
    assert state["log"] == ["it 1", "it 2", "it 3"]  # append: every write kept, in order
    assert state["marks"] == {"3": "seen 3"}  # keyed, emptied when each iteration opened
    assert state["final_answer"] == "last=3"  # the selection rule read "last"
    assert [r["modes"] for r in state["history"]] == [["initial"] * 2, ["marked"] * 2,
                                                      ["marked"] * 2]  # fmt: skip
    marked = [call.user for call in model.log if call.prompt == "solver/marked"]
    assert len(marked) == 4 and all("Marks: (none)" in text for text in marked)
    # the planner read the previous iteration's marks; the solvers ran after the reset


def test_the_reducers() -> None:
    append = ChannelSpec("a", "append", cap=2).merge()
    assert append(["x"], ["y", "z"]) == ["y", "z"]
    assert append(["x"], [{"__reset__": True}, "w"]) == ["w"]
    keyed = ChannelSpec("k", "keyed").merge()
    assert keyed({"0": "a"}, {"1": "b"}) == {"0": "a", "1": "b"}
    assert ChannelSpec("r").merge()("old", "new") == "new"


def test_a_channel_or_a_field_nobody_provides_is_refused_before_anything_runs() -> None:
    no_channel = spec(channels={"log": {"reducer": "append"}, "last": {}})
    with pytest.raises(SpecError) as found:
        tmas.load_topology(no_channel)
    text = str(found.value)
    assert "uses channel 'marks', which neither the spec's channels: block nor a plugin" in text
    assert "with: names channel 'marks'" in text
    unhanded = spec()
    unhanded["edges"][1] = {"from": "start", "to": "solve", "fanout": {"tasks": "solver_tasks"}}
    with pytest.raises(SpecError, match=r"prompts\.solver/marked uses \{marks\}, which it is not"):
        tmas.load_topology(unhanded)
    with pytest.raises(SpecError, match="channels.candidates: 'candidates' is a key"):
        tmas.load_topology(spec(channels={**spec()["channels"], "candidates": {}}))


def test_an_override_may_use_any_field_its_task_carries() -> None:
    model = ScriptedChatModel()
    prompts = {"verifier/user": "Check {solution} (check {check_index} of {candidate_index})"}
    graph = tmas.build_graph("tmas", llm=model, prompts=prompts,
                             config={"n_candidates": 1, "max_iterations": 1})  # fmt: skip
    graph.invoke({"problem": PROBLEM})
    checks = [call.user for call in model.log if call.prompt == "verifier/user"]
    assert checks and all(text.endswith("(check 0 of 0)") or "(check 1 of 0)" in text
                          for text in checks)  # fmt: skip


def test_a_registered_channel_joins_the_topologies_that_use_it(restored_registry: Any) -> None:
    register_channel("test_registered_notes", reducer="append")
    taken = ChannelSpec("test_taken_notes", "keyed")
    restored_registry.channels.add("test_taken_notes", taken, "another_plugin")
    with pytest.raises(ValueError, match="already registered by another_plugin"):
        register_channel("test_taken_notes", reducer="append")
    assert register_channel("test_registered_notes", reducer="append").reducer == "append"
