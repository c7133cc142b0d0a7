"""``tmas serve`` killed (SIGKILL) or stopped (SIGTERM) in the middle of a request's run:
restarted with ``--resume-interrupted``, it finishes the run, repeating no completed call, with
the answers of an uninterrupted run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tmas.lifecycle.history import saved_state
from tmas.storage import open_storage
from tmas.testing.fake_openai_server import FakeOpenAIServer

N, M, T = 3, 2, 3
CALLS_PER_ITERATION = N + N * M + 3 * N
CONCURRENCY = 2  # calls in flight per run: at most this many are made again after a kill
BODY = {
    "model": "tmas",
    "messages": [{"role": "user", "content": "What is 9 + 9?"}],
    "n_candidates": N,
    "n_verifications": M,
    "max_iterations": T,
}

pytestmark = pytest.mark.slow


def start_server(endpoint: FakeOpenAIServer, db: Path, port: int, *extra: str) -> subprocess.Popen:
    command = [
        sys.executable, "-m", "tmas.cli", "serve", "--no-bundled", "--graph", "tmas",
        "--port", str(port), "--base-url", endpoint.base_url, "--model", "scripted",
        "--db", str(db), "--max-concurrency", str(CONCURRENCY), *extra,
    ]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return server
        except httpx.TransportError:
            assert server.poll() is None, server.stdout.read().decode()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("stop_signal", [signal.SIGKILL, signal.SIGTERM])
def test_a_stopped_server_resumes_its_runs_repeating_no_completed_call(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    port, db = free_port(), tmp_path / "runs.sqlite"
    server: subprocess.Popen | None = None
    kill_at = [0]

    def stop_server(count: int) -> None:
        if count == kill_at[0] and server is not None:
            os.kill(server.pid, stop_signal)

    with FakeOpenAIServer(latency_s=0.02, on_complete=stop_server) as endpoint:
        server = start_server(endpoint, db, port)
        url = f"http://127.0.0.1:{port}/v1"
        whole = httpx.post(f"{url}/chat/completions", json=BODY, timeout=120).json()
        uninterrupted = endpoint.request_count
        assert uninterrupted == CALLS_PER_ITERATION * T

        kill_at[0] = uninterrupted + CALLS_PER_ITERATION + N + 3  # in iteration 2's checks
        seen: dict[str, object] = {}

        def ask() -> None:
            try:
                with httpx.stream("POST", f"{url}/chat/completions", json={**BODY, "stream": True},
                                  timeout=120) as response:  # fmt: skip
                    seen["run_id"] = response.headers["x-tmas-run-id"]
                    seen["lines"] = list(response.iter_lines())
            except httpx.TransportError as exc:  # the server died under it
                seen["error"] = exc

        client = threading.Thread(target=ask)
        client.start()
        server.wait(timeout=120)
        client.join(timeout=60)
        stopped_at = endpoint.request_count
        run_id = str(seen["run_id"])
        if stop_signal == signal.SIGTERM:  # told the client, saved as the server's stop
            assert server.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the signal
            assert any("server_stopped" in line for line in seen.get("lines", []))  # type: ignore[attr-defined]
        storage = open_storage(db)
        try:
            record = storage.registry.get(run_id)
            state = saved_state(storage, run_id)
        finally:
            storage.close()
        assert state["iteration"] == 2 and not state.get("stop_reason")
        assert stopped_at >= kill_at[0]

        server = start_server(endpoint, db, port, "--resume-interrupted")
        try:
            deadline, info = time.monotonic() + 120, {}
            while time.monotonic() < deadline:
                info = httpx.get(f"{url}/runs/{run_id}").json()
                if info["status"] not in ("running", "interrupted"):
                    break
                time.sleep(0.1)
        finally:
            server.terminate()
            server.wait(timeout=60)
        resumed_total = endpoint.request_count - uninterrupted

    # a killed server leaves the run "running" (read as interrupted: its process is gone)
    assert record.status == ("running" if stop_signal == signal.SIGKILL else "interrupted")
    assert info["status"] == "finished", info
    # Calls in flight at the stop (at most one per concurrent slot) may run again; no other.
    assert uninterrupted <= resumed_total <= uninterrupted + CONCURRENCY
    assert info["final_answer"] == whole["tmas"]["final_answers"][0]
    storage = open_storage(db)
    try:
        answers = [h["answers"] for h in saved_state(storage, run_id)["history"]]
        first = [h["answers"] for h in saved_state(storage, whole["tmas"]["run_ids"][0])["history"]]
    finally:
        storage.close()
    assert answers == first
