"""LLM faults never crash a run: the fault-injecting server, retries with backoff, failed calls
recorded and left out of the vote, and a run whose every solver call failed stopping with a
clear error that a resume repairs."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import openai
import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import get_runtime
from langgraph.store.memory import InMemoryStore
from typer.testing import CliRunner

from tmas import build_tmas_graph
from tmas.api import build_graph
from tmas.cli import app
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.call_failures import (
    AllSolverCallsFailed,
    RecordFailures,
    attempt_number,
    retry_policy,
)
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.history import saved_state
from tmas.lifecycle.manager import RunManager
from tmas.llm.backend import BackendSpec
from tmas.llm.errors import ModelCallError, is_transient
from tmas.llm.openai_compat import make_openai_chat_model
from tmas.llm.router import ModelRouter
from tmas.memory.shared_board import TaskQueue
from tmas.state import failed
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.fault_server import FAILING_KINDS, FaultInjectingServer, spread_rate

PROBLEM = "What is 9 + 9?"
CLIENT_TIMEOUT_S = 0.5
ASK = [("system", "Solve it."), ("human", "What is 1 + 1?")]
AS_SOLVER: Any = {"metadata": {"tmas_role": "solver"}}  # sent as the X-TMAS-Role header
FAST_RETRIES = {"retry_initial_interval": 0.01, "retry_max_interval": 0.05, "retry_jitter": False}


def chat(server: FaultInjectingServer) -> Any:
    return make_openai_chat_model(
        base_url=server.base_url,
        model="scripted",
        max_tokens=32,
        temperature=0.0,
        timeout=CLIENT_TIMEOUT_S,
    )


# ---- the fault server ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("http_500", openai.InternalServerError),
        ("http_429", openai.RateLimitError),
        ("timeout", openai.APITimeoutError),
        ("drop", openai.APIConnectionError),
        ("malformed", json.JSONDecodeError),
    ],
)
def test_each_failing_kind_raises_a_transient_client_error(kind: str, error: type) -> None:
    with FaultInjectingServer({kind: 1.0}, hold_s=3.0, retry_after_s=2) as server:
        started = time.monotonic()
        with pytest.raises(error) as raised:
            chat(server).invoke(ASK, config=AS_SOLVER)
        assert time.monotonic() - started < 2.0  # a held request ends at the client's timeout
        assert server.injected[kind] == 1 and server.ok_count == 0
    wrapped = ModelCallError.wrap("solver", raised.value)
    assert is_transient(raised.value) and wrapped.transient
    assert wrapped.retry_after_s == (2.0 if kind == "http_429" else None)


def test_empty_and_slow_completions_are_answers() -> None:
    with FaultInjectingServer({"empty": 1.0}) as server:
        assert chat(server).invoke(ASK, config=AS_SOLVER).content == ""
        assert (server.injected["empty"], server.ok_count) == (1, 0)
    with FaultInjectingServer({"slow": 1.0}, slow_s=0.2) as server:
        started = time.monotonic()
        reply = chat(server).invoke(ASK, config=AS_SOLVER)
        assert "boxed" in reply.content and time.monotonic() - started >= 0.2
        assert (server.injected["slow"], server.ok_count) == (1, 1)


def test_faults_are_seeded_and_counted() -> None:
    def kinds_of(seed: int) -> dict[str, int]:
        with FaultInjectingServer(spread_rate(0.5), seed=seed, hold_s=0) as server:
            model = chat(server)
            for _ in range(30):
                try:
                    model.invoke(ASK, config=AS_SOLVER)
                except Exception:  # noqa: BLE001 - every failing kind raises something else
                    pass
            counts = server.counts()
        assert counts["requests"] == 30
        assert counts["ok"] + sum(counts["injected"].values()) == 30
        return counts["injected"]

    assert kinds_of(3) == kinds_of(3)
    assert sum(kinds_of(3).values()) > 0


def test_bad_rates_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown fault kinds"):
        FaultInjectingServer({"gremlins": 0.1})
    with pytest.raises(ValueError, match="add up to"):
        FaultInjectingServer({"http_500": 0.7, "drop": 0.7})
    with pytest.raises(ValueError, match="loopback"):
        FaultInjectingServer(host="0.0.0.0")


def test_the_server_stops_by_itself_at_its_bounds() -> None:
    with FaultInjectingServer(max_requests=2) as server:
        model = chat(server)
        model.invoke(ASK, config=AS_SOLVER)
        model.invoke(ASK, config=AS_SOLVER)
        deadline = time.monotonic() + 5
        while not server.finished and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.finished and server.seen_count == 2
    with FaultInjectingServer(max_lifetime_s=0.2) as server:
        time.sleep(0.5)
        assert server.finished


@pytest.mark.slow
def test_command_line_mode_prints_its_url_and_counts() -> None:
    command = [sys.executable, "-m", "tmas.testing.fault_server", "--rate", "1.0"]
    command += ["--kinds", "http_500", "--max-requests", "1", "--max-lifetime", "30"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(
                model="scripted", messages=[{"role": "user", "content": "hi"}]
            )
        out, _ = process.communicate(timeout=20)
    assert process.returncode == 0
    assert json.loads(out.strip().splitlines()[-1])["injected"]["http_500"] == 1


# ---- retries -------------------------------------------------------------------------------


def test_attempt_number_is_langgraphs_count_for_the_same_task() -> None:
    seen: list[tuple[str, int | None]] = []

    def flaky(state: dict[str, Any]) -> dict[str, Any]:
        seen.append((get_runtime().execution_info.task_id, attempt_number()))
        raise ModelCallError("solver call failed: reset", role="solver", transient=True)

    config = TMASConfig(max_retries=2, **FAST_RETRIES)
    graph = StateGraph(dict)
    graph.add_node("call", RecordFailures(flaky, "call", 3), retry_policy=retry_policy(config))
    graph.add_edge(START, "call")
    graph.add_edge("call", END)
    state = graph.compile().invoke({"x": 1})
    assert [attempt for _, attempt in seen] == [1, 2, 3]
    assert len({task for task, _ in seen}) == 1  # the same task, retried
    assert state["usage"]["solver"]["failed_calls"] == 1


def test_a_retry_waits_as_long_as_the_server_asked() -> None:
    def rate_limited(state: dict[str, Any]) -> dict[str, Any]:
        raise ModelCallError("429", role="verifier", transient=True, retry_after_s=0.3)

    config = TMASConfig(max_retries=1, **FAST_RETRIES)
    graph = StateGraph(dict)
    node = RecordFailures(rate_limited, "call", 2, max_wait_s=5.0)
    graph.add_node("call", node, retry_policy=retry_policy(config))
    graph.add_edge(START, "call")
    graph.add_edge("call", END)
    started = time.monotonic()
    state = graph.compile().invoke({"x": 1})
    assert time.monotonic() - started >= 0.3
    assert state["usage"]["verifier"]["failed_calls"] == 1


@pytest.mark.parametrize("name", ["tmas_barrier", "tmas"])
def test_retry_settings_reach_every_llm_node(name: str) -> None:
    config = TMASConfig(max_retries=4, retry_backoff_factor=3.0, **FAST_RETRIES)
    nodes = build_graph(load_bundled(name), llm=ModelRouter(ScriptedChatModel()), config=config)
    chain = nodes  # the pipelined form keeps each candidate's nodes in its body's subgraph
    if name == "tmas":
        assert nodes.builder.nodes["candidate"].retry_policy is None
        chain = nodes.builder.nodes["candidate"].runnable
    policy = chain.builder.nodes["verify"].retry_policy
    assert (policy.max_attempts, policy.initial_interval, policy.backoff_factor) == (5, 0.01, 3.0)
    assert (policy.max_interval, policy.jitter) == (0.05, False)
    assert nodes.builder.nodes["update_banks"].retry_policy is None


def test_the_client_does_not_retry_and_its_timeout_is_finite() -> None:
    settings: dict[str, Any] = {"base_url": "http://h/v1", "model": "m", "max_tokens": 8}
    assert make_openai_chat_model(**settings, temperature=0).max_retries == 0
    with pytest.raises(ValueError, match="timeout"):
        make_openai_chat_model(**settings, temperature=0, timeout=float("inf"))
    with pytest.raises(ValueError):
        BackendSpec(kind="openai", timeout_s=float("inf"))


# ---- failed calls are recorded and left out -----------------------------------------------

N, M = 3, 2


def fail_calls(*calls: tuple[str, int]) -> ScriptedChatModel:
    return ScriptedChatModel(fail_when=lambda role, n: (role, n) in calls)


def test_failed_candidates_and_checks_are_left_out_of_the_vote() -> None:
    # One worker: solver call 2 is candidate 1, verifier call 1 is the first check of candidate 0.
    model = fail_calls(("solver", 2), ("verifier", 1), ("guideline", 1))
    config = TMASConfig(n_candidates=N, n_verifications=M, max_iterations=1, max_retries=2)
    graph = build_tmas_graph(config, llm=model)
    state = graph.invoke({"problem": PROBLEM}, {"max_concurrency": 1})

    lost = [c for c in state["candidates"] if failed(c)]
    assert [(c["index"], c["answer"], c["text"]) for c in lost] == [(1, None, "")]
    assert "scripted failure of solver call 2" in lost[0]["error"]
    checked = Counter(v["candidate_index"] for v in state["verifications"])
    assert checked == {0: M, 2: M}  # the failed candidate is not verified
    (bad_check,) = [v for v in state["verifications"] if failed(v)]
    assert (bad_check["verdict"], bad_check["score"]) == ("unknown", None)
    assert sorted(s["candidate_index"] for s in state["summaries"]) == [0, 2]
    assert model.calls["experience"] == model.calls["guideline"] == N - 1

    record = state["history"][0]
    assert record["answers"][1] is None and record["scores"][1] is None
    assert record["scores"][0] == 0.8  # the mean of the one check that did not fail
    assert sum(record["vote"].values()) == pytest.approx(0.8 + 0.8)
    assert state["final_answer"] is not None
    assert {role: u.get("failed_calls", 0) for role, u in state["usage"].items()} == {
        "solver": 1,
        "verifier": 1,
        "summary": 0,
        "experience": 0,
        "guideline": 1,
    }
    assert state["usage"]["solver"]["calls"] == N - 1
    # each candidate's chain hands back its own failures: candidate 0's, then candidate 1's
    assert [(f["role"], f["node"], f["index"]) for f in state["call_failures"]] == [
        ("verifier", "verify", 0),
        ("guideline", "extract_guideline", 0),
        ("solver", "solve", 1),
    ]


def test_delm_records_a_failed_plan_and_a_failed_answer() -> None:
    model = fail_calls(("planner", 1), ("writer", 1))  # the planning call, the answer call
    store = InMemoryStore()
    config = TMASConfig(max_iterations=1, max_retries=0)
    graph = build_graph(load_bundled("delm"), llm=ModelRouter(model), config=config, store=store)
    state = graph.invoke({"problem": PROBLEM}, {"configurable": {"thread_id": "d"}})
    seeded = [t["text"] for t in TaskQueue(store, ("delm", "d")).all() if t["added_by"] == "seed"]
    assert seeded == [PROBLEM]  # without a plan the problem itself is the task
    (candidate,) = state["candidates"]
    assert failed(candidate) and state["final_answer"] is None
    usage = state["usage"]
    assert usage["planner"]["failed_calls"] == usage["writer"]["failed_calls"] == 1


def test_every_solver_call_failing_stops_the_run_and_resume_makes_them_again(
    tmp_path: Path,
) -> None:
    config = TMASConfig(n_candidates=N, n_verifications=M, max_iterations=2, max_retries=0)
    conn = connect(tmp_path / "runs.sqlite")
    broken = fail_calls(*[("solver", N + i) for i in range(1, N + 1)])  # all of iteration 2

    def manager(model: ScriptedChatModel) -> RunManager:
        return RunManager(conn, lambda plan: ModelRouter(model))

    with pytest.raises(AllSolverCallsFailed, match="every solver call of iteration 2 failed") as e:
        manager(broken).start(
            "r1",
            problem=PROBLEM,
            gold_answer="18",
            plan=plan_run(load_bundled("tmas"), config, BackendSpec()),
            show_progress=False,
        )
    # the last candidate's error: one of iteration 2's solver calls (each chain starts its own,
    # so which call number candidate N-1 got depends on thread timing)
    assert any(f"scripted failure of solver call {N + i}" in str(e.value) for i in range(1, N + 1))
    assert manager(broken).registry.get("r1").status == "failed"
    stopped = saved_state(conn, "r1")
    assert stopped["iteration"] == 2 and len(stopped["history"]) == 1

    healthy = ScriptedChatModel()
    outcome = manager(healthy).resume("r1", show_progress=False)
    assert outcome.finished and len(outcome.state["history"]) == 2
    assert healthy.calls == Counter(
        {"solver": N, "verifier": N * M, "summary": N, "experience": N, "guideline": N}
    )  # iteration 2 only, its solver calls made again
    solver = outcome.state["usage"]["solver"]
    assert (solver["calls"], solver["failed_calls"]) == (2 * N, N)  # the failures are kept
    assert len(outcome.state["call_failures"]) == N


# ---- through the real OpenAI client, against the fault server -----------------------------


def openai_backend(server: FakeOpenAIServer) -> BackendSpec:
    return BackendSpec(
        kind="openai", base_url=server.base_url, model="scripted", timeout_s=CLIENT_TIMEOUT_S
    )


@pytest.mark.slow
def test_a_run_with_twenty_percent_faults_finishes(tmp_path: Path) -> None:
    # One retry: a call fails for good when both its attempts draw a fault (about 3 in 100).
    config = TMASConfig(
        n_candidates=4, n_verifications=2, max_iterations=2, max_retries=1, **FAST_RETRIES
    )
    rates = {**spread_rate(0.2, FAILING_KINDS), "slow": 0.05}
    with FaultInjectingServer(rates, seed=4, hold_s=1.0, slow_s=0.1, retry_after_s=0) as server:
        outcome = RunManager(connect(tmp_path / "runs.sqlite")).start(
            "faulty",
            problem=PROBLEM,
            gold_answer="18",
            plan=plan_run(load_bundled("tmas"), config, openai_backend(server)),
            show_progress=False,
        )
        counts = server.counts()
    state = outcome.state
    assert outcome.finished and state["final_answer"] is not None
    usage = state["usage"]
    answered = sum(u["calls"] for u in usage.values())
    lost = sum(u.get("failed_calls", 0) for u in usage.values())
    assert sum(counts["injected"].values()) > 0
    assert counts["requests"] > answered + lost  # injected faults were retried
    assert lost == len(state.get("call_failures", []))
    for candidate in state["candidates"]:
        if failed(candidate):
            assert candidate["answer"] is None
            assert all(v["candidate_index"] != candidate["index"] for v in state["verifications"])
    scores = [v["score"] for v in state["verifications"] if failed(v)]
    assert all(score is None for score in scores)


@pytest.mark.slow
def test_a_run_whose_every_call_fails_stops_and_resumes_when_the_server_is_back(
    tmp_path: Path,
) -> None:
    config = TMASConfig(
        n_candidates=2, n_verifications=1, max_iterations=2, max_retries=1, **FAST_RETRIES
    )
    db = tmp_path / "runs.sqlite"
    with FaultInjectingServer({"http_500": 1.0}) as down:
        backend, port = openai_backend(down), int(down.base_url.rsplit(":", 1)[1].split("/")[0])
        with pytest.raises(AllSolverCallsFailed, match="every solver call of iteration 1"):
            RunManager(connect(db)).start(
                "outage",
                problem=PROBLEM,
                gold_answer="18",
                plan=plan_run(load_bundled("tmas"), config, backend),
                show_progress=False,
            )
        assert down.seen_count == 2 * 2  # each solver call tried twice, nothing else called
    runner = CliRunner()
    listed = runner.invoke(app, ["runs", "--db", str(db)])
    assert listed.exit_code == 0 and "outage" in listed.output and "failed" in listed.output

    with FakeOpenAIServer(port=port) as back:  # the same address, healthy again
        resumed = runner.invoke(app, ["resume", "outage", "--db", str(db)])
        assert resumed.exit_code == 0, resumed.output
        assert back.request_count == 2 * config.calls_per_iteration()
    shown = runner.invoke(app, ["show", "outage", "--json", "--db", str(db)])
    body = json.loads(shown.output[shown.output.index("{") :])
    assert body["stop_reason"] == "max_iterations" and body["final_answer"] is not None
    assert body["usage"]["solver"]["failed_calls"] == 2
