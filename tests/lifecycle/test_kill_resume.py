"""A run killed (SIGKILL) or interrupted (Ctrl-C) during iteration 2 resumes and repeats no
completed LLM call."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from kill_helpers import CALLS_PER_ITERATION, CONCURRENCY, N, T, resume_command, solve_command

from tmas.lifecycle.history import saved_state
from tmas.storage.sqlite import connect
from tmas.testing.fake_openai_server import FakeOpenAIServer


def _default_sigint() -> None:
    """Let the child take Ctrl-C even when the tests were started in the background, where a
    shell hands its children SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "TMAS_HOME": str(tmp_path), "TMAS_API_KEY": "test-key"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stop_signal", "exit_code"), [(signal.SIGKILL, -signal.SIGKILL), (signal.SIGINT, 130)]
)
def test_stopped_in_iteration_two_then_resume_repeats_no_completed_call(
    tmp_path: Path, stop_signal: signal.Signals, exit_code: int
) -> None:
    with FakeOpenAIServer(latency_s=0.02) as server:
        subprocess.run(
            solve_command(server, tmp_path / "whole.sqlite", "whole"),
            env=_env(tmp_path),
            check=True,
            capture_output=True,
            timeout=120,
        )
        uninterrupted = server.request_count
    assert uninterrupted == CALLS_PER_ITERATION * T

    kill_at = CALLS_PER_ITERATION + N + 3  # inside iteration 2's verification fan-out
    proc: subprocess.Popen | None = None

    def kill_client(count: int) -> None:
        if count == kill_at and proc is not None:
            os.kill(proc.pid, stop_signal)

    db = tmp_path / "killed.sqlite"
    with FakeOpenAIServer(latency_s=0.02, on_complete=kill_client) as server:
        proc = subprocess.Popen(
            solve_command(server, db, "killed"),
            env=_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_default_sigint,
        )
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == exit_code, stderr.decode()
        if stop_signal == signal.SIGINT:
            assert b"tmas resume killed" in stderr
        before_resume = server.request_count
        state = saved_state(connect(db), "killed")
        assert state["iteration"] == 2 and not state.get("stop_reason")

        resumed = subprocess.run(
            resume_command(db, "killed"),
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert resumed.returncode == 0, resumed.stderr
        total = server.request_count

    assert before_resume >= kill_at
    # Calls in flight at the kill (at most one per concurrent slot) may run again; nothing else.
    assert uninterrupted <= total <= uninterrupted + CONCURRENCY
    final = saved_state(connect(db), "killed")
    whole = saved_state(connect(tmp_path / "whole.sqlite"), "whole")
    assert final["stop_reason"] == "max_iterations"
    assert [h["answers"] for h in final["history"]] == [h["answers"] for h in whole["history"]]
    assert final["final_answer"] == whole["final_answer"]
    assert "killed: answer" in resumed.stdout.replace("run ", "")
