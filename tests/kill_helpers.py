"""The `tmas solve` / `tmas resume` processes that the kill tests stop and restart."""

from __future__ import annotations

import sys
from pathlib import Path

from tmas.testing.fake_openai_server import FakeOpenAIServer

N, M, T = 3, 2, 3
CONCURRENCY = 2  # LLM calls in flight at once: at most this many are made again after a kill
CALLS_PER_ITERATION = N + N * M + 3 * N


def _common(db: Path) -> list[str]:
    return ["--db", str(db), "--quiet", "--max-concurrency", str(CONCURRENCY)]


def solve_command(server: FakeOpenAIServer, db: Path, run_id: str) -> list[str]:
    """``tmas solve`` of 9 + 9 (N, M, T above) against the scripted ``server``."""
    return [
        sys.executable, "-m", "tmas.cli", "solve", "What is 9 + 9?", "--gold", "18",
        "--base-url", server.base_url, "--model", "scripted", "-n", str(N), "-m", str(M),
        "-t", str(T), "--run-id", run_id, *_common(db),
    ]  # fmt: skip


def resume_command(db: Path, run_id: str) -> list[str]:
    """``tmas resume`` of ``run_id`` with the same limits."""
    return [sys.executable, "-m", "tmas.cli", "resume", run_id, *_common(db)]
