"""Invalid topology specs are refused before anything runs, and each error names the offender."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from spec_helpers import VALID, edge, node, only_problem, problems_of, spec_of

from tmas.graphs.bundled import bundled_dir, load_bundled
from tmas.graphs.spec import GraphSpec, SpecError, load_spec_file, parse_spec
from tmas.graphs.validate import validate_spec


def test_the_small_reference_spec_is_valid() -> None:
    spec = validate_spec(parse_spec(VALID))
    assert spec.node_ids() == ["a", "b"]


def test_a_loop_with_an_until_edge_is_valid() -> None:
    data = spec_of(
        [node("a"), node("b")],
        [edge("START", "a"), edge("a", "b"), edge("b", "a", until="run_finished")],
    )
    assert validate_spec(parse_spec(data)).name == "case"


def test_unknown_node_type_names_the_node_and_the_type() -> None:
    data = spec_of(
        [node("a"), node("frobnicate_step", "frobnicate")],
        [edge("START", "a"), edge("a", "frobnicate_step"), edge("frobnicate_step", "END")],
    )
    problem = only_problem(data)
    assert "node frobnicate_step" in problem
    assert "unknown node type 'frobnicate'" in problem
    assert "solve" in problem  # the known types are listed


def test_dangling_edge_target_is_named() -> None:
    data = spec_of([node("a")], [edge("START", "a"), edge("a", "ghost_target")])
    problem = only_problem(data)
    assert "a -> ghost_target" in problem
    assert "dangling" in problem


def test_dangling_edge_target_inside_a_target_list_is_named() -> None:
    data = spec_of([node("a")], [edge("START", "a"), edge("a", ["END", "phantom"])])
    assert "a -> phantom" in only_problem(data)


def test_dangling_loop_exit_is_named() -> None:
    data = spec_of(
        [node("a")], [edge("START", "a"), edge("a", "a", until="run_finished", exit="nowhere")]
    )
    assert "a -> nowhere" in only_problem(data)


def test_dangling_edge_source_is_named() -> None:
    data = spec_of([node("a")], [edge("START", "a"), edge("a", "END"), edge("ghost_source", "a")])
    problem = only_problem(data)
    assert "'ghost_source'" in problem
    assert "dangling" in problem


def test_node_unreachable_from_start_is_named() -> None:
    data = spec_of(
        [node("a"), node("island")],
        [edge("START", "a"), edge("a", "END"), edge("island", "END")],
    )
    problem = only_problem(data)
    assert "unreachable from START" in problem
    assert problem.rstrip().endswith("island")


def test_node_that_can_never_reach_end_is_named() -> None:
    data = spec_of(
        [node("a"), node("dead_end")],
        [edge("START", "a"), edge("a", ["dead_end", "END"])],
    )
    problem = only_problem(data)
    assert "can never reach END" in problem
    assert problem.rstrip().endswith("dead_end")


def test_loop_without_an_exit_names_the_nodes_of_the_cycle() -> None:
    # a -> b -> c -> a with a plain (not 'until') back edge; a can also leave to END
    data = spec_of(
        [node("a"), node("b"), node("c")],
        [
            edge("START", "a"),
            edge("a", ["b", "END"]),
            edge("b", "c"),
            edge("c", "a"),
        ],
    )
    problem = only_problem(data)
    assert problem.startswith("loop without an exit")
    cycle = problem.split(":", 1)[1].strip()
    assert sorted(part.strip() for part in cycle.split("->")) == ["a", "b", "c"]


def test_closed_loop_reports_the_cycle_and_the_nodes_stuck_in_it() -> None:
    data = spec_of([node("a"), node("b")], [edge("START", "a"), edge("a", "b"), edge("b", "a")])
    problems = problems_of(data)
    stuck = [p for p in problems if "can never reach END" in p]
    loops = [p for p in problems if p.startswith("loop without an exit")]
    assert len(stuck) == 1 and re.search(r"\ba\b", stuck[0]) and re.search(r"\bb\b", stuck[0])
    assert len(loops) == 1
    assert sorted(p.strip() for p in loops[0].split(":", 1)[1].split("->")) == ["a", "b"]


def test_unknown_task_builder_is_named() -> None:
    data = spec_of(
        [node("a"), node("b")],
        [edge("START", "a"), edge("a", "b", fanout={"tasks": "no_such_tasks"}), edge("b", "END")],
    )
    problem = only_problem(data)
    assert "edge from a" in problem
    assert "unknown task builder 'no_such_tasks'" in problem


def test_unknown_stop_condition_is_named() -> None:
    data = spec_of([node("a")], [edge("START", "a"), edge("a", "a", until="when_pigs_fly")])
    problem = only_problem(data)
    assert "edge from a" in problem
    assert "unknown stop condition 'when_pigs_fly'" in problem
    assert "run_finished" in problem  # the known conditions are listed


def test_duplicate_node_ids_are_named() -> None:
    data = spec_of(
        [node("a"), node("twin"), node("twin", "solve")],
        [edge("START", "a"), edge("a", "twin"), edge("twin", "END")],
    )
    problem = only_problem(data)
    assert problem == "duplicate node ids: twin"


def test_reserved_node_id_is_refused() -> None:
    data = spec_of([node("END")], [edge("START", "END")])
    assert "node id END is reserved" in problems_of(data)


def test_fanout_edge_plus_another_outgoing_edge_names_the_node() -> None:
    data = spec_of(
        [node("hub"), node("b"), node("c")],
        [
            edge("START", "hub"),
            edge("hub", "b", fanout={"copies": 2}),
            edge("hub", "c"),
            edge("b", "END"),
            edge("c", "END"),
        ],
    )
    problem = only_problem(data)
    assert "node hub" in problem
    assert "only outgoing edge" in problem


def test_loop_edge_plus_another_outgoing_edge_names_the_node() -> None:
    data = spec_of(
        [node("a"), node("b")],
        [
            edge("START", "a"),
            edge("a", "b"),
            edge("b", "a", until="run_finished"),
            edge("b", "END"),
        ],
    )
    assert "node b: a fan-out or loop edge must be the node's only outgoing edge" in problems_of(
        data
    )


def test_spec_without_an_edge_from_start_is_refused() -> None:
    data = spec_of([node("a")], [edge("a", "END")])
    assert "no edge from START" in problems_of(data)


def test_edge_without_to_names_the_field() -> None:
    data = spec_of([node("a")], [edge("START", "a"), {"from": "a"}])
    assert only_problem(data) == "edges.1.to: Field required"


def test_node_without_type_names_the_field() -> None:
    data = spec_of([{"id": "a"}], [edge("START", "a"), edge("a", "END")])
    assert only_problem(data) == "nodes.0.type: Field required"


def test_spec_without_nodes_names_the_field() -> None:
    assert "nodes: Field required" in problems_of({"name": "x", "edges": []})


def test_unknown_field_is_named() -> None:
    data = spec_of([node("a", colour="red")], [edge("START", "a"), edge("a", "END")])
    problem = only_problem(data)
    assert problem.startswith("nodes.0.colour")


def test_unknown_model_role_is_named() -> None:
    data = spec_of([node("a", role="oracle")], [edge("START", "a"), edge("a", "END")])
    assert only_problem(data).startswith("node a: unknown role 'oracle'")


def test_bad_retry_settings_are_named() -> None:
    data = spec_of([node("a", retry={"max_attempts": 0})], [edge("START", "a"), edge("a", "END")])
    assert only_problem(data).startswith("nodes.0.retry.max_attempts")


@pytest.mark.parametrize(
    "fanout",
    [
        {"tasks": "solver_tasks", "over": "candidates"},
        {"tasks": "solver_tasks", "copies": 2},
        {"over": "candidates", "copies": 2},
        {},
    ],
    ids=["tasks+over", "tasks+copies", "over+copies", "none"],
)
def test_fanout_needs_exactly_one_of_tasks_over_copies(fanout: dict[str, Any]) -> None:
    data = spec_of(
        [node("a"), node("b")],
        [edge("START", "a"), edge("a", "b", fanout=fanout), edge("b", "END")],
    )
    problem = only_problem(data)
    assert problem.startswith("edges.1.fanout")
    assert "exactly one of tasks, over, copies" in problem


def test_loop_edge_with_a_fanout_is_refused() -> None:
    data = spec_of(
        [node("a")],
        [edge("START", "a"), edge("a", "a", until="run_finished", fanout={"copies": 2})],
    )
    problem = only_problem(data)
    assert problem.startswith("edges.1")
    assert "loop edge" in problem


def test_every_problem_is_reported_at_once() -> None:
    data = spec_of(
        [node("a", "nope_one"), node("b", "nope_two")],
        [edge("START", "a"), edge("a", "b"), edge("b", "gone")],
    )
    text = "\n".join(problems_of(data))
    assert "'nope_one'" in text and "'nope_two'" in text and "b -> gone" in text


@pytest.mark.parametrize("top", [[1, 2], "just a string", 42, None])
def test_non_mapping_top_level_is_refused(top: Any) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(top)
    assert caught.value.problems == [
        f"expected a mapping at the top level, got {type(top).__name__}"
    ]


def test_non_mapping_top_level_in_a_yaml_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec_file(path)
    assert caught.value.problems == ["expected a mapping at the top level, got list"]
    assert str(path) in str(caught.value)


def test_bad_yaml_syntax_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nnodes: [ {id: a, type: join\nedges: []\n", encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec_file(path)
    assert len(caught.value.problems) == 1
    assert caught.value.problems[0].startswith("cannot parse broken.yaml")


def test_bad_json_syntax_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"name": "x", "nodes": [', encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec_file(path)
    assert caught.value.problems[0].startswith("cannot parse broken.json")


def test_missing_spec_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(SpecError) as caught:
        load_spec_file(path)
    assert caught.value.problems[0].startswith(f"cannot read {path}")


def test_json_spec_file_loads_like_its_yaml_twin(tmp_path: Path) -> None:
    data = yaml.safe_load((bundled_dir() / "tmas.yaml").read_text(encoding="utf-8"))
    json_path = tmp_path / "tmas_copy.json"
    json_path.write_text(json.dumps(data), encoding="utf-8")
    yaml_path = tmp_path / "tmas_copy.yaml"
    yaml_path.write_text(yaml.safe_dump(data), encoding="utf-8")

    from_json = validate_spec(load_spec_file(json_path))
    from_yaml = validate_spec(load_spec_file(yaml_path))
    assert isinstance(from_json, GraphSpec)
    assert from_json == from_yaml == load_bundled("tmas")


def test_invalid_json_spec_file_is_validated_too(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    data = spec_of([node("a", "nope")], [edge("START", "a"), edge("a", "END")])
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        validate_spec(load_spec_file(path))
    assert "node a: unknown node type 'nope'" in caught.value.problems[0]


def test_pydantic_model_is_accepted_as_is() -> None:
    spec = GraphSpec.model_validate(VALID)
    assert parse_spec(spec) is spec
