"""Pipeline nodes: a body spec run once per fan-out task as a subgraph. The pipelined ``tmas``
makes the calls and reaches the outcome of its barrier form, a fast candidate's checks start
while a slow solver still works, and bodies that cannot work are refused before anything runs."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from tmas.api import build_graph
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.estimate import estimate_run_calls
from tmas.graphs.spec import SpecError, parse_spec
from tmas.graphs.validate import validate_spec
from tmas.llm.openai_compat import make_openai_chat_model
from tmas.llm.router import ModelRouter
from tmas.seeding import derive_seed
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer

PROBLEM = "What is 9 + 9?"
CONFIG = TMASConfig(n_candidates=3, n_verifications=2, max_iterations=2, max_retries=0, seed=3)


def outcome(name: str, config: TMASConfig = CONFIG) -> tuple[dict, ScriptedChatModel]:
    model = ScriptedChatModel()
    state = build_graph(load_bundled(name), llm=ModelRouter(model), config=config).invoke(
        {"problem": PROBLEM}
    )
    return state, model


def test_the_pipelined_form_makes_the_barrier_forms_calls_and_outcome() -> None:
    fast, fast_model = outcome("tmas")
    slow, slow_model = outcome("tmas_barrier")
    assert fast_model.calls == slow_model.calls
    assert sorted((c.role, c.seed) for c in fast_model.log) == sorted(
        (c.role, c.seed) for c in slow_model.log
    )
    for key in ("history", "final_answer", "experience_bank", "guideline_bank", "usage"):
        assert fast[key] == slow[key], key
    for key in ("candidates", "verifications", "summaries"):
        assert fast[key] == slow[key], key  # the same items, in the same order


def test_tmas_and_its_barrier_form_make_the_same_calls_per_role() -> None:
    (_, pipelined), (_, barrier) = outcome("tmas"), outcome("tmas_barrier")
    n, m, t = CONFIG.n_candidates, CONFIG.n_verifications, CONFIG.max_iterations
    expected = {"solver": n, "verifier": n * m, "summary": n, "experience": n, "guideline": n}
    assert pipelined.calls == barrier.calls == {k: v * t for k, v in expected.items()}
    assert estimate_run_calls(load_bundled("tmas"), CONFIG).total == sum(pipelined.calls.values())
    assert estimate_run_calls(load_bundled("tmas"), CONFIG) == estimate_run_calls(
        load_bundled("tmas_barrier"), CONFIG
    )


def test_a_failed_solver_ends_only_its_own_chain() -> None:
    model = ScriptedChatModel(fail_when=lambda role, n: role == "solver" and n == 1)
    config = TMASConfig(n_candidates=3, n_verifications=2, max_iterations=1, max_retries=0)
    state = build_graph(load_bundled("tmas"), llm=ModelRouter(model), config=config).invoke(
        {"problem": PROBLEM}
    )
    assert model.calls["verifier"] == 2 * 2 and model.calls["summary"] == 2
    solver = state["usage"]["solver"]
    assert (solver["calls"], solver["failed_calls"]) == (2, 1)
    assert len(state["call_failures"]) == 1


# ---- a fast candidate's chain does not wait for a slow solver -------------------------------


def arrival_order(name: str, wait_s: float) -> dict[str, Any]:
    """Run ``name`` once against a server whose solver of candidate 0 answers only once a
    verification request arrived (or after ``wait_s``): which came first."""
    slow_seed = derive_seed(CONFIG.seed, "solve", 1, 0)
    verifier_arrived = threading.Event()
    seen: dict[str, Any] = {}

    def latency_of(body: dict[str, Any]) -> float:
        role = (body.get("tmas") or {}).get("role")
        if role == "verifier":
            verifier_arrived.set()
        if role == "solver" and body.get("seed") == slow_seed:
            seen["verifier_before_slow_solver_answered"] = verifier_arrived.wait(wait_s)
        return 0.0

    with FakeOpenAIServer(latency_of=latency_of) as server:
        chat = make_openai_chat_model(
            base_url=server.base_url, model="scripted", max_tokens=64, temperature=0.0
        )
        config = CONFIG.model_copy(update={"max_iterations": 1})
        graph = build_graph(load_bundled(name), llm=ModelRouter(chat), config=config)
        graph.invoke({"problem": PROBLEM}, {"max_concurrency": 16})
        seen["roles"] = [(r.get("tmas") or {}).get("role") for r in server.requests]
    return seen


def test_a_fast_candidates_checks_start_before_a_slow_solver_finished(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TMAS_API_KEY", "test-key")
    pipelined = arrival_order("tmas", wait_s=30.0)
    assert pipelined["verifier_before_slow_solver_answered"] is True
    barrier = arrival_order("tmas_barrier", wait_s=1.0)
    assert barrier["verifier_before_slow_solver_answered"] is False
    first_check = barrier["roles"].index("verifier")
    assert barrier["roles"][:first_check] == ["solver"] * CONFIG.n_candidates


# ---- validation -----------------------------------------------------------------------------


def with_body(body: Any) -> dict[str, Any]:
    """The bundled ``tmas`` spec with another body for its candidate pipeline."""
    spec = copy.deepcopy(load_bundled("tmas").model_dump(by_alias=True))
    spec["nodes"][1]["params"]["spec"] = body
    return spec


def problems_of(data: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as found:
        validate_spec(parse_spec(data))
    return found.value.problems


def test_an_unknown_body_is_named() -> None:
    (problem,) = problems_of(with_body("no_such_chain"))
    assert problem.startswith("node candidate: body: no bundled topology 'no_such_chain'")


def test_a_body_that_loops_or_ends_an_iteration_is_refused() -> None:
    problems = problems_of(with_body("majority_vote"))
    assert any("body 'majority_vote': edge from record_iteration loops (until)" in p
               for p in problems)  # fmt: skip
    assert any("node record_iteration (record_iteration) opens or ends an iteration" in p
               for p in problems)  # fmt: skip
    assert any("node start_iteration (start_iteration) opens or ends an iteration" in p
               for p in problems)  # fmt: skip


def test_a_broken_inline_body_is_checked_like_a_spec() -> None:
    body = {"nodes": [{"id": "solve", "type": "solvee"}], "edges": [{"from": "START", "to": "x"}]}
    problems = problems_of(with_body(body))
    assert any("body 'candidate': node solve: unknown node type 'solvee'" in p for p in problems)
    assert any("body 'candidate': edge START -> x: no such node" in p for p in problems)


def test_a_pipeline_entered_by_a_plain_edge_is_refused() -> None:
    data = with_body(load_bundled("tmas").model_dump(by_alias=True)["nodes"][1]["params"]["spec"])
    data["edges"][1] = {"from": "start_iteration", "to": "candidate"}
    (problem,) = problems_of(data)
    assert "a pipeline runs once per fan-out task" in problem and "start_iteration" in problem
