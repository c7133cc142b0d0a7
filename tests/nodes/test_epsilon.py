"""The epsilon-greedy split between exploitation and exploration, and what each mode reads."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tmas import build_tmas_graph
from tmas.config import TMASConfig
from tmas.nodes.agents.solver import solver_prompt, solver_tasks
from tmas.nodes.control.iteration import plan_iteration
from tmas.nodes.control.planners import choose_mode
from tmas.nodes.tasks import TaskRequest
from tmas.testing.fake_chat import ScriptedChatModel

PROBLEM = "What is 9 + 9?"


def round_calls(model: ScriptedChatModel, config: TMASConfig, iteration: int) -> dict[int, Any]:
    """The solver calls of ``iteration``, by candidate index (found by their seeds)."""
    calls = model.solver_calls(config.seed, config.max_iterations)
    return {index: call for (it, index), call in calls.items() if it == iteration}


def modes(config: TMASConfig, iteration: int, previous_count: int) -> list[str]:
    return [p["mode"] for p in plan_iteration(config, iteration, list(range(previous_count)))]


@pytest.mark.parametrize("epsilon", [0.0, 0.2, 1.0])
def test_iteration_one_is_plain_sampling(epsilon: float) -> None:
    config = TMASConfig(n_candidates=8, epsilon=epsilon)
    plans = plan_iteration(config, 1, [])
    assert [p["mode"] for p in plans] == ["initial"] * 8
    assert all(p["parent_index"] is None for p in plans)
    assert [p["index"] for p in plans] == list(range(8))
    assert len({p["seed"] for p in plans}) == 8


def test_epsilon_zero_always_exploits_from_iteration_two() -> None:
    config = TMASConfig(n_candidates=8, epsilon=0.0)
    for iteration in range(2, 12):
        plans = plan_iteration(config, iteration, list(range(5)))
        assert [p["mode"] for p in plans] == ["exploit"] * 8
        assert [p["parent_index"] for p in plans] == [i % 5 for i in range(8)]


def test_epsilon_one_always_explores() -> None:
    config = TMASConfig(n_candidates=8, epsilon=1.0)
    for iteration in range(2, 12):
        plans = plan_iteration(config, iteration, list(range(8)))
        assert [p["mode"] for p in plans] == ["explore"] * 8
        assert all(p["parent_index"] is None for p in plans)


def test_exploit_without_previous_rollouts_falls_back_to_explore() -> None:
    config = TMASConfig(n_candidates=3, epsilon=0.0)
    assert modes(config, 2, previous_count=0) == ["explore"] * 3


def test_explore_fraction_matches_epsilon() -> None:
    epsilon = 0.2
    draws = [
        choose_mode(TMASConfig(epsilon=epsilon, seed=seed), iteration, index)
        for seed in range(40)
        for iteration in range(2, 12)
        for index in range(16)
    ]
    n = len(draws)
    assert set(draws) == {"explore", "exploit"}
    fraction = draws.count("explore") / n
    sigma = math.sqrt(epsilon * (1 - epsilon) / n)
    assert abs(fraction - epsilon) < 4 * sigma, (fraction, sigma)


def test_choices_depend_only_on_seed_iteration_and_index() -> None:
    small = TMASConfig(n_candidates=4, epsilon=0.5, seed=3)
    large = TMASConfig(
        n_candidates=12, epsilon=0.5, seed=3, n_verifications=5, max_iterations=50, temperature=0.1
    )
    other_seed = TMASConfig(n_candidates=12, epsilon=0.5, seed=4)
    patterns_large: list[str] = []
    patterns_other: list[str] = []
    for iteration in range(2, 10):
        first = modes(small, iteration, 4)
        assert first == modes(small, iteration, 4)  # same plan twice
        assert modes(large, iteration, 4)[:4] == first  # other sizes: same prefix
        patterns_large += modes(large, iteration, 4)
        patterns_other += modes(other_seed, iteration, 4)
    assert patterns_large != patterns_other


def test_graph_history_follows_the_split() -> None:
    for epsilon, later in ((0.0, "exploit"), (1.0, "explore")):
        config = TMASConfig(n_candidates=3, n_verifications=1, max_iterations=3, epsilon=epsilon)
        state = build_tmas_graph(config, llm=ScriptedChatModel()).invoke({"problem": PROBLEM})
        assert [r["modes"] for r in state["history"]] == [
            ["initial"] * 3,
            [later] * 3,
            [later] * 3,
        ]
        assert all(c["mode"] == later for c in state["candidates"])


def test_solver_tasks_carry_exactly_their_mode_context() -> None:
    config = TMASConfig(n_candidates=3, experiences_per_prompt=2)
    plans = [
        {"iteration": 2, "index": 0, "mode": "exploit", "parent_index": 1, "seed": 1},
        {"iteration": 2, "index": 1, "mode": "explore", "parent_index": None, "seed": 2},
        {"iteration": 2, "index": 2, "mode": "initial", "parent_index": None, "seed": 3},
    ]
    state: dict[str, Any] = {
        "problem": "How many apples are left?",
        "plans": plans,
        "previous": [
            {"index": 0, "text": "Rollout zero.", "answer": "1", "summary": "s0"},
            {
                "index": 1,
                "text": "We count apples: 5 - 2 = 3.",
                "answer": "3",
                "summary": "Step two subtracts wrongly.",
                "mean_score": 0.2,
            },
        ],
        "experience_bank": [
            {"id": "e1", "text": "Verified: 5 apples at the start", "hits": 1},
            {"id": "e2", "text": "Pitfall: trains run on rails", "hits": 9},
            {"id": "e3", "text": "Verified: apples count is 5 minus 2", "hits": 2},
        ],
        "guideline_bank": [
            {"id": "g1", "text": "Work backwards from the total"},
            {"id": "g2", "text": "Draw a diagram"},
        ],
    }
    exploit, explore, initial = solver_tasks(TaskRequest(state, config))

    assert exploit["parent"]["text"] == "We count apples: 5 - 2 = 3."
    assert [e["id"] for e in exploit["experiences"]] == ["e3", "e1"]
    assert "guidelines" not in exploit
    exploit_prompt = solver_prompt(exploit)
    assert "We count apples: 5 - 2 = 3." in exploit_prompt
    assert "Step two subtracts wrongly." in exploit_prompt
    assert "- Verified: apples count is 5 minus 2" in exploit_prompt
    assert "- Verified: 5 apples at the start" in exploit_prompt
    assert "trains" not in exploit_prompt  # only the ``experiences_per_prompt`` most relevant
    assert "Work backwards" not in exploit_prompt

    assert explore["guidelines"] == ["Work backwards from the total", "Draw a diagram"]
    assert "parent" not in explore
    explore_prompt = solver_prompt(explore)
    assert "- Work backwards from the total" in explore_prompt
    assert "- Draw a diagram" in explore_prompt
    assert "Rollout" not in explore_prompt and "Verified" not in explore_prompt

    initial_prompt = solver_prompt(initial)
    assert set(initial) == {"problem", "plan"}
    assert "How many apples are left?" in initial_prompt
    assert "Draw a diagram" not in initial_prompt and "Verified" not in initial_prompt


def test_exploit_prompts_in_a_run_carry_parent_summary_and_experiences() -> None:
    config = TMASConfig(n_candidates=3, n_verifications=2, max_iterations=2, epsilon=0.0)
    model = ScriptedChatModel()
    states = list(build_tmas_graph(config, llm=model).stream({"problem": PROBLEM}))
    assert states  # the run streamed updates

    first = round_calls(model, config, 1)
    second = round_calls(model, config, 2)
    assert sorted(first) == sorted(second) == [0, 1, 2]
    for call in first.values():
        assert "An earlier attempt" not in call.user
    summaries = {c.reply.strip() for c in model.log if c.role == "summary"}
    experience_replies = [c.reply for c in model.log if c.role == "experience"]
    experiences = [line[2:] for reply in experience_replies for line in reply.splitlines()]
    for index, call in second.items():
        prompt = call.user
        parent = first[index % 3].reply
        assert "An earlier attempt:\n" + parent in prompt
        assert any(s in prompt for s in summaries)
        notes = prompt.split("Reliable notes from earlier attempts:")[1]
        for fact in experiences:
            assert f"- {fact}" in notes
        assert "(none yet)" not in notes


def test_explore_prompts_in_a_run_list_the_guideline_bank() -> None:
    config = TMASConfig(n_candidates=4, n_verifications=1, max_iterations=2, epsilon=1.0)
    model = ScriptedChatModel()
    bank_after_first: list[str] = []
    for values in build_tmas_graph(config, llm=model).stream(
        {"problem": PROBLEM}, stream_mode="values"
    ):
        if len(values.get("history", [])) == 1:
            bank_after_first = [g["text"] for g in values["guideline_bank"]]
    assert bank_after_first

    second = round_calls(model, config, 2)
    assert sorted(second) == [0, 1, 2, 3]
    for call in second.values():
        prompt = call.user
        assert "do NOT use them" in prompt
        listed = prompt.split("find a different approach):\n")[1].split("\n\n")[0]
        assert listed.splitlines() == [f"- {text}" for text in bank_after_first]
        assert "An earlier attempt" not in prompt
