"""The bundled topologies: they validate, are listed, run on a fake model with the LLM calls
their shape implies, and resume after a failed call."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from topology_helpers import (
    ANSWER_ROLE,
    ISSUE_TOPOLOGIES,
    PROBLEM,
    M,
    N,
    T,
    config_for,
    expected_calls,
    run,
)
from typer.testing import CliRunner

from tmas.api import build_graph
from tmas.cli import app
from tmas.graphs.bundled import bundled_dir, bundled_names, load_bundled, resolve_spec
from tmas.graphs.estimate import estimate_run_calls
from tmas.graphs.traits import spec_needs_internals
from tmas.graphs.validate import validate_spec
from tmas.llm.router import ModelRouter
from tmas.testing.fake_chat import ScriptedChatModel, SimulatedCrash

# ---- validation and listing ----------------------------------------------------------------


def test_the_issue_topologies_are_bundled() -> None:
    assert ISSUE_TOPOLOGIES <= set(bundled_names())


# DeLM's calls follow its dynamic task queue; tests/nodes/test_delm.py covers it. A latent topology
# needs an in-process model's internals: tests/nodes/test_agent_chains.py runs it on SmolLM2.
ROUND_TOPOLOGIES = sorted(
    name for name in set(bundled_names()) - {"delm"} if not spec_needs_internals(load_bundled(name))
)


def test_every_bundled_topology_has_a_call_expectation() -> None:
    for name in ROUND_TOPOLOGIES:
        assert expected_calls(name, N, M, T), name


@pytest.mark.parametrize("name", bundled_names())
def test_bundled_spec_validates(name: str) -> None:
    spec = load_bundled(name)
    assert validate_spec(spec) is spec
    assert spec.name == name
    assert spec.description.strip()


@pytest.mark.parametrize("name", bundled_names())
def test_bundled_spec_resolves_by_name_and_by_path(name: str) -> None:
    by_path = resolve_spec(str(bundled_dir() / f"{name}.yaml"))
    assert resolve_spec(name) == by_path == load_bundled(name)


def test_cli_graphs_lists_every_bundled_topology() -> None:
    result = CliRunner().invoke(app, ["graphs"])
    assert result.exit_code == 0, result.output
    rows = [line.split("│") for line in result.stdout.splitlines() if line.startswith("│")]
    listed = [cells[1].strip() for cells in rows if cells[1].strip()]
    assert listed == bundled_names()
    text = " ".join(result.stdout.split())
    for name in bundled_names():
        first_words = " ".join(load_bundled(name).description.split()[:2])
        assert first_words in text, name


# ---- calls per role ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ROUND_TOPOLOGIES)
def test_bundled_topology_makes_the_calls_its_shape_implies(name: str) -> None:
    spec = load_bundled(name)
    config = config_for(spec)
    model = ScriptedChatModel()

    state = run(spec, config, model)

    n, m, t = config.n_candidates, config.n_verifications, config.max_iterations
    expected = expected_calls(name, n, m, t)
    assert dict(model.calls) == expected
    assert {role: usage["calls"] for role, usage in state["usage"].items()} == expected
    assert len(state["history"]) == t
    assert state["stop_reason"] == "max_iterations"
    assert state["final_answer"] in {"17", "18"}


def test_topology_defaults_shape_the_run() -> None:
    assert config_for(load_bundled("majority_vote")).max_iterations == 1
    assert config_for(load_bundled("self_refine")).n_verifications == 1
    assert config_for(load_bundled("verify_refine")).n_verifications == M


def test_pacore_last_round_has_one_sample() -> None:
    spec = load_bundled("pacore")
    state = run(spec, config_for(spec), ScriptedChatModel())
    assert [len(record["answers"]) for record in state["history"]] == [N] * (T - 1) + [1]
    assert [set(record["modes"]) for record in state["history"]] == [{"initial"}] + [
        {"reference"}
    ] * (T - 1)


def test_estimate_is_right_for_tmas() -> None:
    spec = load_bundled("tmas")
    config = config_for(spec)
    model = ScriptedChatModel()
    run(spec, config, model)

    estimate = estimate_run_calls(spec, config)
    assert estimate.exact
    assert estimate.total == (N + N * M + 3 * N) * T == config.calls_per_iteration() * T
    assert estimate.total == sum(model.calls.values())


@pytest.mark.parametrize("name", ROUND_TOPOLOGIES)
def test_estimate_is_exactly_the_calls_of_a_run(name: str) -> None:
    spec = load_bundled(name)
    config = config_for(spec)
    model = ScriptedChatModel()
    run(spec, config, model)
    estimate = estimate_run_calls(spec, config)
    assert estimate.exact
    assert (
        estimate.total
        == sum(model.calls.values())
        == sum(expected_calls(name, N, config.n_verifications, config.max_iterations).values())
    )


@pytest.mark.parametrize("name", ["pacore", "tmas", "rsa"])
def test_estimate_follows_round_widths(name: str) -> None:
    spec = load_bundled(name)
    config = config_for(spec, round_widths=[4, 2, 1])
    model = ScriptedChatModel()
    state = run(spec, config, model)
    assert [len(record["answers"]) for record in state["history"]] == [4, 2, 1]
    assert estimate_run_calls(spec, config).total == sum(model.calls.values())


def test_delm_estimate_is_a_bound_and_says_so() -> None:
    spec = load_bundled("delm")
    config = config_for(spec)
    estimate = estimate_run_calls(spec, config)
    assert not estimate.exact
    assert str(estimate) == f"<={estimate.total}"
    assert estimate.total == 1 + 3 * 2 * 4 + 1  # seed, 3 workers x 4 steps x (reason + judge)


def test_self_refine_critique_runs_on_the_solver_model() -> None:
    spec = load_bundled("self_refine")
    config = config_for(spec)
    main, judge = ScriptedChatModel(), ScriptedChatModel()

    run(spec, config, main, overrides={"verifier": judge})

    assert judge.calls == Counter()
    assert dict(main.calls) == {"solver": N * T, "critic": N * T}  # its own role, usage row


def test_verify_refine_verifier_uses_the_verifier_model() -> None:
    spec = load_bundled("verify_refine")
    config = config_for(spec)
    main, judge = ScriptedChatModel(), ScriptedChatModel()

    run(spec, config, main, overrides={"verifier": judge})

    assert dict(judge.calls) == {"verifier": N * M * T}
    assert dict(main.calls) == {"solver": N * T}


# ---- resume after an interruption ----------------------------------------------------------


@pytest.mark.parametrize("name", ROUND_TOPOLOGIES)
def test_bundled_topology_resumes_after_a_failed_call(name: str) -> None:
    spec = load_bundled(name)
    config = config_for(spec, max_iterations=min(2, config_for(spec).max_iterations))
    reference_model = ScriptedChatModel()
    reference = run(spec, config, reference_model)
    answering = ANSWER_ROLE.get(name, "solver")
    last_solver_call = reference_model.calls[answering]

    saver = InMemorySaver()
    thread: dict[str, Any] = {"configurable": {"thread_id": name}, "max_concurrency": 1}

    def crash_on_last_solver_call(role: str | None, number: int) -> bool:
        if role == answering and number == last_solver_call:
            raise SimulatedCrash("crash during the last solver call")
        return False

    failing = ScriptedChatModel(fail_when=crash_on_last_solver_call)
    graph = build_graph(spec, llm=ModelRouter(failing), config=config, checkpointer=saver)
    with pytest.raises(SimulatedCrash):
        graph.invoke({"problem": PROBLEM}, thread)
    assert not graph.get_state(thread).values.get("stop_reason")

    fresh = ScriptedChatModel()
    resumed = build_graph(spec, llm=ModelRouter(fresh), config=config, checkpointer=saver).invoke(
        None, thread
    )

    for key in ("history", "final_answer", "stop_reason", "experience_bank", "guideline_bank"):
        assert resumed.get(key) == reference.get(key), key
    assert resumed["usage"] == reference["usage"]
    # every call is made once over both runs, except the one that failed
    for role, count in reference_model.calls.items():
        assert failing.calls[role] + fresh.calls[role] == count + (role == answering), role
    assert fresh.calls[answering] == 1
