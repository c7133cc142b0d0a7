"""Fan-out sizes of the TMAS loop: calls per role per iteration, usage accounting, stop rules."""

from __future__ import annotations

from collections import Counter

import pytest

from tmas import build_tmas_graph
from tmas.config import TMASConfig
from tmas.roles import ROLES
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies

PROBLEM = "What is 9 + 9?"
SIZES = [(3, 2, 2), (8, 8, 1), (2, 3, 3), (1, 1, 2)]


def expected_per_iteration(n: int, m: int) -> Counter:
    return Counter({"solver": n, "verifier": n * m, "summary": n, "experience": n, "guideline": n})


@pytest.mark.parametrize(("n", "m", "t"), SIZES)
def test_each_iteration_makes_exactly_the_fanout_calls(n: int, m: int, t: int) -> None:
    model = ScriptedChatModel()
    config = TMASConfig(n_candidates=n, n_verifications=m, max_iterations=t)
    graph = build_tmas_graph(config, llm=model)

    per_iteration: list[Counter] = []
    before = Counter()
    for update in graph.stream({"problem": PROBLEM}, stream_mode="updates"):
        if "record_iteration" in update:
            now = model.calls
            per_iteration.append(now - before)
            before = now

    assert len(per_iteration) == t
    for calls in per_iteration:
        assert calls == expected_per_iteration(n, m)
        assert sum(calls.values()) == config.calls_per_iteration()


@pytest.mark.parametrize(("n", "m", "t"), SIZES)
def test_totals_usage_and_history(n: int, m: int, t: int) -> None:
    model = ScriptedChatModel()
    config = TMASConfig(n_candidates=n, n_verifications=m, max_iterations=t)
    state = build_tmas_graph(config, llm=model).invoke({"problem": PROBLEM})

    per_iteration = expected_per_iteration(n, m)
    assert model.calls == Counter({role: t * k for role, k in per_iteration.items()})
    assert None not in model.calls  # every prompt named its role
    assert sum(model.calls.values()) == t * config.calls_per_iteration()

    usage = state["usage"]
    assert set(usage) == set(ROLES)
    for role in ROLES:
        assert usage[role]["calls"] == model.calls[role]
        assert usage[role]["input_tokens"] > 0
        assert usage[role]["output_tokens"] > 0

    history = state["history"]
    assert [record["iteration"] for record in history] == list(range(1, t + 1))
    for record in history:
        assert len(record["answers"]) == n
        assert len(record["modes"]) == n
        assert len(record["scores"]) == n
    assert state["iteration"] == t
    assert state["stop_reason"] == "max_iterations"
    assert len(state["candidates"]) == n
    assert len(state["verifications"]) == n * m
    assert len(state["summaries"]) == n


def test_stop_on_consensus_ends_after_the_first_unanimous_iteration() -> None:
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
    config = TMASConfig(n_candidates=4, n_verifications=2, max_iterations=5, stop_on_consensus=True)
    state = build_tmas_graph(config, llm=model).invoke({"problem": PROBLEM})

    assert state["stop_reason"] == "consensus"
    assert len(state["history"]) == 1
    assert state["history"][0]["answers"] == ["18"] * 4
    assert state["final_answer"] == "18"
    assert sum(model.calls.values()) == config.calls_per_iteration()


def test_consensus_rule_is_off_by_default() -> None:
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
    config = TMASConfig(n_candidates=3, n_verifications=1, max_iterations=3)
    state = build_tmas_graph(config, llm=model).invoke({"problem": PROBLEM})

    assert state["stop_reason"] == "max_iterations"
    assert len(state["history"]) == 3
    assert sum(model.calls.values()) == 3 * config.calls_per_iteration()


def test_agreement_with_weak_verification_does_not_stop_early() -> None:
    # Everyone answers 18, but the checks score 0.5 < 0.7: the consensus rule must not fire.
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",), verifier_score=5))
    config = TMASConfig(n_candidates=3, n_verifications=2, max_iterations=3, stop_on_consensus=True)
    state = build_tmas_graph(config, llm=model).invoke({"problem": PROBLEM})

    assert state["history"][0]["mean_score"] == pytest.approx(0.5)
    assert state["stop_reason"] == "max_iterations"
    assert len(state["history"]) == 3
