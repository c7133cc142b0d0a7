"""A run killed with SIGKILL at 10 random points and resumed after each kill completes with
the uninterrupted run's answers, repeating no call except those in flight at a kill."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from kill_helpers import CALLS_PER_ITERATION, CONCURRENCY, T, resume_command, solve_command

from tmas.lifecycle.history import saved_state
from tmas.storage.sqlite import connect
from tmas.testing.fake_openai_server import FakeOpenAIServer

CALLS = CALLS_PER_ITERATION * T
KILLS = 10

pytestmark = pytest.mark.slow


def command(server: FakeOpenAIServer, db: Path, first: bool) -> list[str]:
    return solve_command(server, db, "run") if first else resume_command(db, "run")


def test_ten_random_kills_lose_nothing(tmp_path: Path) -> None:
    env = {**os.environ, "TMAS_HOME": str(tmp_path)}
    with FakeOpenAIServer(latency_s=0.01) as server:
        subprocess.run(
            command(server, tmp_path / "whole.sqlite", True),
            env=env,
            check=True,
            capture_output=True,
            timeout=120,
        )
        assert server.request_count == CALLS
    whole = saved_state(connect(tmp_path / "whole.sqlite"), "run")

    rng = random.Random(20261130)
    # served-call counts; the last ones leave calls to spare, so a kill cannot land after the
    # run's last call (a delayed kill of a process that already finished kills nothing)
    kill_points = sorted(rng.sample(range(2, CALLS - 10), KILLS))
    delays = [rng.uniform(0.0, 0.03) for _ in kill_points]  # land between calls, too
    db = tmp_path / "killed.sqlite"
    killed = 0
    proc: subprocess.Popen | None = None
    armed = threading.Event()

    def maybe_kill(count: int) -> None:
        if killed < KILLS and count >= kill_points[killed] and armed.is_set():
            armed.clear()
            target = proc
            threading.Timer(delays[killed], lambda: target and target.kill()).start()

    with FakeOpenAIServer(latency_s=0.01, on_complete=maybe_kill) as server:
        attempts = 0
        while True:
            attempts += 1
            assert attempts <= KILLS + 2, "the run never finished"
            proc = subprocess.Popen(
                command(server, db, attempts == 1),
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            # Armed only once ``proc`` is the new process: a late answer to a call of the
            # killed one would otherwise aim the next kill at the dead process.
            armed.set()
            _, stderr = proc.communicate(timeout=120)
            if proc.returncode == -signal.SIGKILL:
                killed += 1
                continue
            assert proc.returncode == 0, stderr.decode()
            state = saved_state(connect(db), "run")
            if state.get("stop_reason"):
                break
        total = server.request_count

    assert killed == KILLS
    # Only calls whose results were not saved at a kill may be made again: at most one in flight
    # per concurrent slot, plus at most one finished call per slot whose writes LangGraph was still
    # saving in the background.
    assert CALLS <= total <= CALLS + 2 * CONCURRENCY * KILLS
    assert state["final_answer"] == whole["final_answer"]
    assert [h["answers"] for h in state["history"]] == [h["answers"] for h in whole["history"]]
    assert state["usage"]["solver"]["calls"] == whole["usage"]["solver"]["calls"]
