"""A pipelined run (each candidate's chain a subgraph) killed with SIGKILL mid-iteration, after
two chains finished their verifications while the third still waits for its solver, resumes
and makes no finished solver or verifier call again; only calls cut off by the kill (in flight,
or answered an instant before it while their writes were being saved) are made again."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kill_helpers import CALLS_PER_ITERATION, CONCURRENCY, N, T, resume_command, solve_command

from tmas.lifecycle.history import saved_state
from tmas.seeding import derive_seed
from tmas.storage.sqlite import connect
from tmas.testing.fake_openai_server import FakeOpenAIServer

SLOW_SOLVER = ("solver", derive_seed(0, "solve", 1, 0))  # candidate 0 of iteration 1

pytestmark = pytest.mark.slow


def key_of(body: dict[str, Any]) -> tuple[str | None, Any]:
    """A call's identity: its role and seed (each call of a run has its own)."""
    return (body.get("tmas") or {}).get("role"), body.get("seed")


class KillWhenTwoChainsSummarize:
    """The scripted server's hooks: the slow solver answers only once the client was killed,
    and the client is killed when the second summary call is answered (candidates 1 and 2
    are past their checks then; candidate 0 not even past its solver)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.killed = threading.Event()
        self.lock = threading.Lock()
        self.arrived: list[tuple[str | None, Any]] = []
        self.done: list[tuple[str | None, Any]] = []
        self.in_flight_at_kill: set[tuple[str | None, Any]] = set()
        self.answered_last: set[tuple[str | None, Any]] = set()
        self.current = threading.local()

    def latency_of(self, body: dict[str, Any]) -> float:
        key = key_of(body)
        with self.lock:
            self.arrived.append(key)
            first_slow = key == SLOW_SOLVER and self.arrived.count(key) == 1
        if first_slow:
            self.killed.wait(60)
        with self.lock:
            self.done.append(key)
        self.current.key = key
        return 0.0

    def on_complete(self, count: int) -> None:
        with self.lock:
            summaries = sum(role == "summary" for role, _ in self.done)
            if summaries != 2 or self.killed.is_set() or self.proc is None:
                return
            in_flight = Counter(self.arrived) - Counter(self.done)
            self.in_flight_at_kill = {*in_flight, self.current.key}
            # answered just before the kill: LangGraph may still have been saving their writes
            self.answered_last = set(self.done[-(CONCURRENCY + 1) :]) - {self.current.key}
        os.kill(self.proc.pid, signal.SIGKILL)
        self.killed.set()


def test_a_killed_pipelined_run_repeats_no_finished_solver_or_verifier_call(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "TMAS_HOME": str(tmp_path), "TMAS_API_KEY": "test-key"}
    with FakeOpenAIServer(latency_s=0.01) as server:
        subprocess.run(
            solve_command(server, tmp_path / "whole.sqlite", "whole"),
            env=env, check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        uninterrupted = server.request_count
    assert uninterrupted == CALLS_PER_ITERATION * T

    hooks = KillWhenTwoChainsSummarize()
    db = tmp_path / "killed.sqlite"
    with FakeOpenAIServer(latency_of=hooks.latency_of, on_complete=hooks.on_complete) as server:
        hooks.proc = subprocess.Popen(
            solve_command(server, db, "killed"),
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        _, stderr = hooks.proc.communicate(timeout=120)
        assert hooks.proc.returncode == -signal.SIGKILL, stderr.decode()
        state = saved_state(connect(db), "killed")
        assert state["iteration"] == 1 and not state.get("stop_reason")
        before = list(hooks.arrived)
        # two chains were past their checks, the slow one had not even its candidate
        assert Counter(role for role, _ in before)["verifier"] == 2 * 2
        assert SLOW_SOLVER in hooks.in_flight_at_kill

        resumed = subprocess.run(
            resume_command(db, "killed"), env=env, capture_output=True, text=True, timeout=120
        )
        assert resumed.returncode == 0, resumed.stderr
        calls = [key_of(body) for body in server.requests]

    repeated = {key for key, times in Counter(calls).items() if times > 1}
    # Only calls cut off by the kill are made again: those in flight, and at most one just
    # answered per slot whose writes were still being saved in the background.
    assert repeated <= hooks.in_flight_at_kill | hooks.answered_last, repeated
    assert len(repeated - hooks.in_flight_at_kill) <= CONCURRENCY
    assert not {key for key in repeated if key[0] == "verifier"}  # all saved long before
    assert {key for key in repeated if key[0] == "solver"} <= {SLOW_SOLVER}
    assert uninterrupted <= len(calls) <= uninterrupted + 2 * CONCURRENCY
    assert len(set(calls)) == uninterrupted  # every call of the run made, once or again
    final = saved_state(connect(db), "killed")
    whole = saved_state(connect(tmp_path / "whole.sqlite"), "whole")
    assert final["stop_reason"] == "max_iterations"
    assert [h["answers"] for h in final["history"]] == [h["answers"] for h in whole["history"]]
    assert final["final_answer"] == whole["final_answer"]
    assert final["usage"]["solver"]["calls"] == N * T
