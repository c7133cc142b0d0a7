"""What later rounds of the bundled topologies see: references, aggregated members, the
experience bank, the reports on their own parent."""

from __future__ import annotations

import re
from typing import Any

import pytest
from topology_helpers import (
    M,
    N,
    T,
    config_for,
    run,
)

from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.roles import Role
from tmas.testing.fake_chat import ScriptedCall as Call
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies, acting_role

# ---- what later rounds see -----------------------------------------------------------------


class MarkedReplies(ScriptedReplies):
    """Scripted replies that make each solution traceable: a solver reply starts with
    ``Attempt <seed>`` and a verifier report names the attempt it checked."""

    def reply(
        self, role: Role | None, system: str, user: str, salt: str = "", prompt: str | None = None
    ) -> str:
        text = super().reply(role, system, user, salt, prompt)
        if role == "solver":
            return f"Attempt {salt}.\n{text}"
        if acting_role(role, prompt) == "verifier":
            checked = re.findall(r"Attempt (\d+)\.", user)
            return f"Checked attempt {checked[-1] if checked else 'none'}.\n{text}"
        return text


def solver_calls(model: ScriptedChatModel, config: TMASConfig) -> dict[tuple[int, int], Call]:
    """The solver calls keyed by (iteration, candidate index), found from their seeds."""
    calls = model.solver_calls(config.seed, config.max_iterations)
    assert len(calls) == len(model.calls_of("solver")), "a solver call was made twice"
    return calls


def marker(call: Call) -> str:
    found = re.match(r"Attempt (\d+)\.", call.reply)
    assert found, call.reply
    return found.group(1)


def answer_of(call: Call) -> str:
    found = re.search(r"\\boxed\{([^}]*)\}", call.reply)
    assert found, call.reply
    return found.group(1)


def headers(prompt: str) -> list[tuple[int, str]]:
    return [
        (int(k), a) for k, a in re.findall(r"^Solution (\d+) \(answer: ([^)]*)\):", prompt, re.M)
    ]


def traced_run(name: str, **overrides: Any) -> tuple[dict, TMASConfig, ScriptedChatModel]:
    spec = load_bundled(name)
    config = config_for(spec, **overrides)
    model = ScriptedChatModel(replies=MarkedReplies())
    state = run(spec, config, model)
    return state, config, model


def test_pacore_later_rounds_see_every_solution_of_the_previous_round() -> None:
    state, config, model = traced_run("pacore")
    calls = solver_calls(model, config)
    assert len(calls) == N * (T - 1) + 1

    for index in range(N):
        assert "Solution 1 (answer:" not in calls[(1, index)].user
    for iteration in range(2, T + 1):
        size = N if iteration < T else 1
        previous = [calls[(iteration - 1, j)] for j in range(N)]
        # the history agrees with the replies the model gave
        assert state["history"][iteration - 2]["answers"] == [answer_of(c) for c in previous]
        for index in range(size):
            prompt = calls[(iteration, index)].user
            assert "Solutions other solvers wrote in the previous round" in prompt
            assert headers(prompt) == [(j + 1, answer_of(c)) for j, c in enumerate(previous)]
            for j, parent in enumerate(previous):
                assert f"Solution {j + 1} (answer: {answer_of(parent)}):" in prompt
                assert f"Attempt {marker(parent)}." in prompt
            # nothing of older rounds or of its own round
            seen = set(re.findall(r"Attempt (\d+)\.", prompt))
            assert seen == {marker(c) for c in previous}


def test_rsa_members_aggregate_exactly_two_of_the_previous_population() -> None:
    _, config, model = traced_run("rsa")
    calls = solver_calls(model, config)
    assert len(calls) == N * T

    picked = []
    for iteration in range(2, T + 1):
        previous = {marker(calls[(iteration - 1, j)]): calls[(iteration - 1, j)] for j in range(N)}
        for index in range(N):
            prompt = calls[(iteration, index)].user
            assert "Candidate solutions (some may be wrong)" in prompt
            members = re.findall(r"Attempt (\d+)\.", prompt)
            assert len(members) == 2 and len(set(members)) == 2, members
            assert set(members) <= set(previous)
            assert headers(prompt) == [
                (k + 1, answer_of(previous[member])) for k, member in enumerate(members)
            ]
            picked.append(frozenset(members))
    assert len(picked) == N * (T - 1)
    assert len(set(picked)) > 1  # drawn at random per member, not one fixed pair


def test_rse_attempts_read_the_experience_bank_and_no_guidelines() -> None:
    state, config, model = traced_run("rse", max_iterations=2)
    calls = solver_calls(model, config)

    first_round_facts = [e["text"] for e in state["experience_bank"] if e["iteration"] == 1]
    assert "Verified: the arithmetic of the first step holds." in first_round_facts
    assert "Pitfall: units dropped." in first_round_facts
    for index in range(N):
        assert "Pitfall" not in calls[(1, index)].user
        prompt = calls[(2, index)].user
        assert "Verified facts and known pitfalls from earlier attempts" in prompt
        for fact in first_round_facts:
            assert f"- {fact}" in prompt
    assert state["guideline_bank"] == []
    assert all("Strateg" not in call.user for call in calls.values())
    assert all(call.role != "guideline" for call in model.log)


@pytest.mark.parametrize(("name", "reports"), [("self_refine", 1), ("verify_refine", M)])
def test_refinement_reads_the_reports_on_its_own_parent(name: str, reports: int) -> None:
    _, config, model = traced_run(name, max_iterations=2)
    calls = solver_calls(model, config)
    assert config.n_verifications == reports

    for index in range(N):
        parent = marker(calls[(1, index)])
        prompt = calls[(2, index)].user
        head, _, feedback = prompt.partition("What the verifiers said about that attempt:")
        assert feedback, prompt
        assert f"An earlier attempt:\nAttempt {parent}." in head
        checked = re.findall(r"Report (\d+): Checked attempt (\d+)\.", feedback)
        assert checked == [(str(k + 1), parent) for k in range(reports)]
        assert "Score: 8/10" in feedback
