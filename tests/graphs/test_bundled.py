"""The bundled topologies: they validate, are listed, run on a fake model with the LLM calls
their shape implies, feed later rounds the right context, and resume after a failed call."""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import PrivateAttr
from typer.testing import CliRunner

from tmas.cli import app
from tmas.config import TMASConfig
from tmas.graphs.bundled import bundled_dir, bundled_names, load_bundled, resolve_spec
from tmas.graphs.compiler import compile_spec, estimate_calls
from tmas.graphs.spec import GraphSpec
from tmas.graphs.validate import validate_spec
from tmas.llm.router import ModelRouter
from tmas.roles import Role, role_of_prompt
from tmas.seeding import derive_seed
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies

PROBLEM = "What is 9 + 9?"
N, M, T = 3, 2, 3
SMALL: dict[str, Any] = {
    "n_candidates": N,
    "n_verifications": M,
    "max_iterations": T,
    "max_retries": 0,
    "seed": 7,
}

ISSUE_TOPOLOGIES = {
    "tmas",
    "majority_vote",
    "self_refine",
    "verify_refine",
    "pacore",
    "rsa",
    "rse",
    "tmas_no_experience",
    "tmas_no_guideline",
}


def config_for(spec: GraphSpec, **overrides: Any) -> TMASConfig:
    """Small sizes, then the topology's own defaults, then the test's overrides."""
    return TMASConfig(**{**SMALL, **spec.config, **overrides})


def expected_calls(name: str, n: int, m: int, t: int) -> dict[Role, int]:
    """LLM calls per role one run of ``name`` makes (``m`` and ``t`` as configured)."""
    tmas_like = {"solver": n * t, "verifier": n * m * t, "summary": n * t}
    table: dict[str, dict[Role, int]] = {
        "majority_vote": {"solver": n * t},
        "self_refine": {"solver": n * t, "verifier": n * m * t},
        "verify_refine": {"solver": n * t, "verifier": n * m * t},
        "pacore": {"solver": n * (t - 1) + 1},
        "rsa": {"solver": n * t},
        "rse": {**tmas_like, "experience": n * t},
        "tmas": {**tmas_like, "experience": n * t, "guideline": n * t},
        "tmas_no_experience": {**tmas_like, "guideline": n * t},
        "tmas_no_guideline": {**tmas_like, "experience": n * t},
    }
    return table[name]


def run(spec: GraphSpec, config: TMASConfig, model: ScriptedChatModel, **router: Any) -> dict:
    graph = compile_spec(spec, config, ModelRouter(model, **router))
    return graph.invoke({"problem": PROBLEM})


# ---- validation and listing ----------------------------------------------------------------


def test_the_issue_topologies_are_bundled() -> None:
    assert ISSUE_TOPOLOGIES <= set(bundled_names())


# DeLM's calls follow its dynamic task queue; tests/test_delm.py covers it.
ROUND_TOPOLOGIES = sorted(set(bundled_names()) - {"delm"})


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


def test_estimate_calls_is_right_for_tmas() -> None:
    spec = load_bundled("tmas")
    config = config_for(spec)
    model = ScriptedChatModel()
    run(spec, config, model)

    estimate = estimate_calls(spec, config)
    assert estimate == N + N * M + 3 * N
    assert estimate == config.calls_per_iteration()
    assert estimate * config.max_iterations == sum(model.calls.values())


@pytest.mark.parametrize("name", sorted(set(ROUND_TOPOLOGIES) - {"pacore"}))
def test_estimate_calls_matches_a_run_of_full_rounds(name: str) -> None:
    spec = load_bundled(name)
    config = config_for(spec)
    model = ScriptedChatModel()
    run(spec, config, model)
    assert estimate_calls(spec, config) * config.max_iterations == sum(model.calls.values())


def test_self_refine_critique_runs_on_the_solver_model() -> None:
    spec = load_bundled("self_refine")
    config = config_for(spec)
    main, judge = ScriptedChatModel(), ScriptedChatModel()

    run(spec, config, main, overrides={"verifier": judge})

    assert judge.calls == Counter()
    assert dict(main.calls) == {"solver": N * T, "verifier": N * T}


def test_verify_refine_verifier_uses_the_verifier_model() -> None:
    spec = load_bundled("verify_refine")
    config = config_for(spec)
    main, judge = ScriptedChatModel(), ScriptedChatModel()

    run(spec, config, main, overrides={"verifier": judge})

    assert dict(judge.calls) == {"verifier": N * M * T}
    assert dict(main.calls) == {"solver": N * T}


# ---- what later rounds see -----------------------------------------------------------------


class MarkedReplies(ScriptedReplies):
    """Scripted replies that make each solution traceable: a solver reply starts with
    ``Attempt <seed>`` and a verifier report names the attempt it checked."""

    def reply(self, role: Role | None, system: str, user: str, salt: str = "") -> str:
        text = super().reply(role, system, user, salt)
        if role == "solver":
            return f"Attempt {salt}.\n{text}"
        if role == "verifier":
            checked = re.findall(r"Attempt (\d+)\.", user)
            return f"Checked attempt {checked[-1] if checked else 'none'}.\n{text}"
        return text


@dataclass(frozen=True)
class Call:
    role: Role | None
    system: str
    user: str
    seed: int | None
    reply: str


class RecordingChatModel(ScriptedChatModel):
    """A scripted model that keeps every prompt it answered."""

    _log: list[Call] = PrivateAttr(default_factory=list)
    _log_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        system = "\n".join(str(m.content) for m in messages if m.type == "system")
        user = "\n".join(str(m.content) for m in messages if m.type != "system")
        call = Call(
            role_of_prompt(system),
            system,
            user,
            kwargs.get("seed"),
            str(result.generations[0].message.content),
        )
        with self._log_lock:
            self._log.append(call)
        return result

    @property
    def log(self) -> list[Call]:
        with self._log_lock:
            return list(self._log)


def solver_calls(model: RecordingChatModel, config: TMASConfig) -> dict[tuple[int, int], Call]:
    """The solver calls keyed by (iteration, candidate index), found from their seeds."""
    where = {
        derive_seed(config.seed, "solve", iteration, index): (iteration, index)
        for iteration in range(1, config.max_iterations + 1)
        for index in range(config.n_candidates)
    }
    calls = {}
    for call in model.log:
        if call.role == "solver":
            key = where[call.seed]
            assert key not in calls, f"solver call {key} made twice"
            calls[key] = call
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


def traced_run(name: str, **overrides: Any) -> tuple[dict, TMASConfig, RecordingChatModel]:
    spec = load_bundled(name)
    config = config_for(spec, **overrides)
    model = RecordingChatModel(replies=MarkedReplies())
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


# ---- resume after an interruption ----------------------------------------------------------


@pytest.mark.parametrize("name", ROUND_TOPOLOGIES)
def test_bundled_topology_resumes_after_a_failed_call(name: str) -> None:
    spec = load_bundled(name)
    config = config_for(spec, max_iterations=min(2, config_for(spec).max_iterations))
    reference_model = ScriptedChatModel()
    reference = run(spec, config, reference_model)
    last_solver_call = reference_model.calls["solver"]

    saver = InMemorySaver()
    thread: dict[str, Any] = {"configurable": {"thread_id": name}, "max_concurrency": 1}
    failing = ScriptedChatModel(
        fail_when=lambda role, number: role == "solver" and number == last_solver_call
    )
    graph = compile_spec(spec, config, ModelRouter(failing), checkpointer=saver)
    with pytest.raises(RuntimeError, match="scripted failure of solver"):
        graph.invoke({"problem": PROBLEM}, thread)
    assert not graph.get_state(thread).values.get("stop_reason")

    fresh = ScriptedChatModel()
    resumed = compile_spec(spec, config, ModelRouter(fresh), checkpointer=saver).invoke(
        None, thread
    )

    for key in ("history", "final_answer", "stop_reason", "experience_bank", "guideline_bank"):
        assert resumed.get(key) == reference.get(key), key
    assert resumed["usage"] == reference["usage"]
    # every call is made once over both runs, except the one that failed
    for role, count in reference_model.calls.items():
        assert failing.calls[role] + fresh.calls[role] == count + (role == "solver"), role
    assert fresh.calls["solver"] == 1
