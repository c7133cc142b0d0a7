"""Planners, stop conditions and selection rules are registries usable by name from YAML; node
types declare what the engine needs to know (store, candidates, iteration end); node
parameters are checked with the spec, before anything runs."""

from __future__ import annotations

from typing import Any

import pytest

import tmas
from tests.cli_helpers import db_path, digest, invoke
from tmas.graphs.bundled import load_bundled
from tmas.graphs.estimate import estimate_run_calls
from tmas.graphs.registry import (
    PlanChoice,
    register_node,
    register_planner,
    register_prompts,
    register_stop,
)
from tmas.graphs.spec import SpecError
from tmas.graphs.traits import solver_nodes, spec_uses_store
from tmas.lifecycle.manager import iteration_end_node
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies

PROBLEM = "What is 9 + 9?"
SMALL = {"n_candidates": 3, "n_verifications": 1, "max_iterations": 3}


@pytest.fixture
def registries(restored_registry: Any) -> Any:
    """Registrations made by a test are forgotten after it."""
    return restored_registry


def tmas_with(**changes: Any) -> dict[str, Any]:
    """The bundled TMAS spec as a dict, with its start and record nodes' params changed and
    its loop's stop conditions replaced."""
    data = load_bundled("tmas").model_dump(by_alias=True)
    data["name"] = "changed"
    for node in data["nodes"]:
        node["params"] = {**node["params"], **changes.get(node["id"], {})}
    if "until" in changes:
        data["edges"][-1]["until"] = changes["until"]
    return data


def test_a_plugin_planner_is_used_by_name_from_a_spec(registries: None) -> None:
    @register_planner("repair_first")
    def repair_first(request: Any, spare: int = 0) -> PlanChoice:
        if request.index < spare or not request.rollouts:
            return PlanChoice("explore")
        best = max(request.rollouts, key=lambda r: r["mean_score"] or 0)
        return PlanChoice("exploit", parent_index=best["index"])

    spec = tmas_with(start_iteration={"planner": "repair_first", "spare": 1})
    state = tmas.build_graph(spec, llm=ScriptedChatModel(), config=SMALL).invoke(
        {"problem": PROBLEM}
    )
    assert state["history"][1]["modes"] == ["explore", "exploit", "exploit"]
    assert {c["parent_index"] for c in state["candidates"] if c["mode"] == "exploit"} == {0}


def test_a_planner_mode_of_its_own_needs_and_uses_its_prompt(registries: None) -> None:
    @register_planner("hinted", modes=("hint",))
    def hinted(request: Any) -> PlanChoice:
        return PlanChoice("hint", parent_index=request.previous[0] if request.previous else None)

    spec = tmas_with(start_iteration={"planner": "hinted"})
    with pytest.raises(
        SpecError,
        match="planner 'hinted' makes 'hint' candidates but there is no solver/hint prompt",
    ):
        tmas.load_topology(spec)
    register_prompts("solver", {"hint": "HINT MODE\n{problem}\nEarlier: {parent}\n{guidelines}"})
    state = tmas.build_graph(spec, llm=ScriptedChatModel(), config=SMALL).invoke(
        {"problem": PROBLEM}
    )
    assert state["history"][2]["modes"] == ["hint"] * 3


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"start_iteration": {"planner": "no_such"}}, "unknown planner 'no_such'"),
        (
            {"start_iteration": {"planner": "aggregate", "aggregate_k": "two"}},
            "planner 'aggregate': option 'aggregate_k': Input should be a valid integer",
        ),
        (
            {"start_iteration": {"planner": "refine", "aggregate_k": 2}},
            "planner 'refine': option 'aggregate_k' is not taken",
        ),
        ({"start_iteration": {"final_round_size": 0}}, "final_round_size"),
        ({"record_iteration": {"selection": "no_rule"}}, "unknown selection rule 'no_rule'"),
        ({"record_iteration": {"vote": "all"}}, "parameter 'vote' is not taken"),
        ({"until": ["run_finished", "no_condition"]}, "unknown stop condition 'no_condition'"),
    ],
)
def test_bad_node_parameters_are_refused_with_the_spec(
    changes: dict[str, Any], problem: str
) -> None:
    with pytest.raises(SpecError) as found:
        tmas.load_topology(tmas_with(**changes))
    assert problem in str(found.value)


def test_bad_parameters_are_refused_by_the_command_line_before_anything_is_saved(
    tmp_path: Any,
) -> None:
    import yaml

    path = tmp_path / "typo.yaml"
    spec = tmas_with(start_iteration={"planner": "refine", "aggregate_k": 2})
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    home = tmp_path / "home"
    before = digest(db_path(home))
    result = invoke(home, "solve", PROBLEM, "--graph", str(path))
    assert result.exit_code == 2
    assert "node start_iteration: planner 'refine': option 'aggregate_k'" in result.output
    assert digest(db_path(home)) == before


def test_a_loop_stop_condition_ends_the_run_and_becomes_its_stop_reason(registries: None) -> None:
    @register_stop("second_round")
    def second_round(state: dict[str, Any]) -> bool:
        return state.get("iteration", 0) >= 2

    spec = tmas.load_topology(tmas_with(until=["run_finished", "second_round"]))
    assert not estimate_run_calls(spec, tmas.TMASConfig(**SMALL)).exact  # may stop early
    state = tmas.build_graph(spec, llm=ScriptedChatModel(), config=SMALL).invoke(
        {"problem": PROBLEM}
    )
    assert state["stop_reason"] == "second_round" and len(state["history"]) == 2
    consensus = tmas.build_graph(
        tmas_with(until=["run_finished", "consensus"]),
        llm=ScriptedChatModel(replies=ScriptedReplies(answers=("18",))),
        config=SMALL,
    ).invoke({"problem": PROBLEM})
    assert consensus["stop_reason"] == "consensus" and len(consensus["history"]) == 1


def test_node_types_declare_store_candidates_and_iteration_end(registries: None) -> None:
    @register_node("board_reader", needs_store=True, ends_iteration=True)
    def board_reader(ctx: Any) -> Any:
        return lambda state: {}

    @register_node("writer", produces_candidates=True)
    def writer(ctx: Any) -> Any:
        return lambda state: {}

    spec = tmas.load_topology(
        {
            "name": "custom",
            "nodes": [{"id": "w", "type": "writer"}, {"id": "read", "type": "board_reader"}],
            "edges": [
                {"from": "START", "to": "w"},
                {"from": "w", "to": "read"},
                {"from": "read", "to": "END"},
            ],
        }
    )
    assert spec_uses_store(spec) and not spec_uses_store(load_bundled("tmas"))
    assert solver_nodes(spec) == ["w"]
    assert iteration_end_node(spec) == "read"


def test_a_loop_without_run_finished_still_ends_at_max_iterations(registries: None) -> None:
    @register_stop("never_here")
    def never_here(state: dict[str, Any]) -> bool:
        return False

    state = tmas.build_graph(
        tmas_with(until="never_here"), llm=ScriptedChatModel(), config=SMALL
    ).invoke({"problem": PROBLEM}, {"recursion_limit": 200})
    assert state["stop_reason"] == "max_iterations" and len(state["history"]) == 3


def test_parameter_types_are_checked_strictly() -> None:
    spec = load_bundled("rsa").with_params("start_iteration", aggregate_k="3")
    with pytest.raises(SpecError, match="option 'aggregate_k': Input should be a valid integer"):
        tmas.load_topology(spec)
    delm = load_bundled("delm").with_params("worker", claim_ttl_s=30)  # an int is a float
    assert tmas.load_topology(delm).nodes[1].params["claim_ttl_s"] == 30


def test_a_planner_naming_a_rollout_that_does_not_exist_stops_with_its_name(
    registries: None,
) -> None:
    @register_planner("off_by_one")
    def off_by_one(request: Any) -> PlanChoice:
        return PlanChoice("exploit", parent_index=len(request.previous))

    graph = tmas.build_graph(
        tmas_with(start_iteration={"planner": "off_by_one"}),
        llm=ScriptedChatModel(),
        config=SMALL,
    )
    with pytest.raises(
        ValueError,
        match="planner 'off_by_one' names rollout 3 of the previous "
        r"iteration; it has \[0, 1, 2\]",
    ):
        graph.invoke({"problem": PROBLEM})


def test_extras_of_one_problem_do_not_reach_the_next_on_the_same_thread(
    registries: None,
) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    @register_node("note_problem")
    def note_problem(ctx: Any) -> Any:
        return lambda state: {"extras": {state["problem"]: True}}

    data = load_bundled("majority_vote").model_dump(by_alias=True)
    data["nodes"].append({"id": "note", "type": "note_problem"})
    data["edges"][-1]["exit"] = "note"
    data["edges"].append({"from": "note", "to": "END"})
    graph = tmas.build_graph(data, llm=ScriptedChatModel(), checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "same"}}
    assert graph.invoke({"problem": "a"}, thread)["extras"] == {"a": True}
    assert graph.invoke({"problem": "b"}, thread)["extras"] == {"b": True}


def test_a_fork_whose_loop_would_stop_at_once_is_refused(registries: None, tmp_path: Any) -> None:
    @register_stop("two_done")
    def two_done(state: dict[str, Any]) -> bool:
        return state.get("iteration", 0) >= 2

    db = tmp_path / "runs.sqlite"
    spec = tmas_with(until=["run_finished", "two_done"])
    model = ScriptedChatModel()
    parent = tmas.solve(PROBLEM, topology=spec, llm=model, config=SMALL, db=db, run_id="p")
    assert parent.state["stop_reason"] == "two_done"
    with pytest.raises(ValueError, match="'two_done' already holds after iteration 2"):
        tmas.fork("p", iteration=2, llm=model, db=db)
    child = tmas.fork("p", iteration=1, changes={"epsilon": 1.0}, llm=model, db=db)
    assert child.state["stop_reason"] == "two_done" and len(child.history) == 2
