"""An evaluation killed half-way (SIGKILL) and rerun with the same command skips the problems
that had finished and resumes the one that was running, repeating no finished call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tmas.config import TMASConfig
from tmas.testing.fake_openai_server import FakeOpenAIServer

PROBLEMS = 4
CONFIG = TMASConfig(n_candidates=2, n_verifications=1, max_iterations=2)
PER_PROBLEM = CONFIG.calls_per_iteration() * CONFIG.max_iterations


def eval_args(server: FakeOpenAIServer, tmp_path: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tmas.cli",
        "eval",
        "--out",
        str(tmp_path / "out"),
        "--data",
        "gsm8k",
        "--limit",
        str(PROBLEMS),
        "--base-url",
        server.base_url,
        "--model",
        "scripted",
        "-n",
        "2",
        "-m",
        "1",
        "-t",
        "2",
        "--max-concurrency",
        "1",
        "--db",
        str(tmp_path / "runs.sqlite"),
        "--quiet",
    ]


@pytest.mark.slow
def test_killed_evaluation_reruns_only_what_is_left(tmp_path: Path) -> None:
    kill_at = PER_PROBLEM * 2 + 5  # inside the third problem
    proc: subprocess.Popen | None = None

    def kill(count: int) -> None:
        if count == kill_at and proc is not None:
            os.kill(proc.pid, signal.SIGKILL)

    env = {**os.environ, "TMAS_HOME": str(tmp_path)}
    with FakeOpenAIServer(latency_s=0.01, on_complete=kill) as server:
        proc = subprocess.Popen(
            eval_args(server, tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        proc.communicate(timeout=120)
        assert proc.returncode == -signal.SIGKILL
        rerun = subprocess.run(
            eval_args(server, tmp_path), env=env, capture_output=True, text=True, timeout=120
        )
        total = server.request_count
    assert rerun.returncode == 0, rerun.stderr
    # Everything was asked once, apart from the one call in flight at the kill.
    assert PROBLEMS * PER_PROBLEM <= total <= PROBLEMS * PER_PROBLEM + 1
    rows = [
        json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    ]
    assert len(rows) == PROBLEMS and all(r["status"] == "finished" for r in rows)
    assert all(r["llm_calls"] == PER_PROBLEM for r in rows)
