"""The real vLLM path on the CPU build of vLLM and SmolLM2 (its GGUF weights turned into a
Hugging Face checkpoint once): TMAS on the in-process async engine with true usage counts,
requests that really overlap inside the engine, a killed run resumed on the in-process
engine, TMAS through a managed vLLM OpenAI server, and engine failures as one line."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from typer.testing import CliRunner

import tmas
from tmas.cli import app
from tmas.config import TMASConfig
from tmas.lifecycle.history import saved_state
from tmas.llm.vllm.async_engine import VLLMEngine, shutdown_engines
from tmas.llm.vllm.chat import ChatVLLM
from tmas.llm.vllm.models import in_process_chat_model
from tmas.process_tree import alive, descendants
from tmas.storage.sqlite import connect

pytestmark = pytest.mark.slow

N_CTX = 2048
BACKEND = {"kind": "vllm", "model": "smollm2", "n_ctx": N_CTX}
PROBLEM = "Tom has 3 apples and buys 4 more. How many apples does he have now?"
# Short answers for the runs the CLI makes.
SHORT = [
    "--max-tokens", "32", "--set", "verifier_max_tokens=16", "--set", "summary_max_tokens=16",
    "--set", "experience_max_tokens=16", "--set", "guideline_max_tokens=16",
    "--set", "max_retries=0",
]  # fmt: skip
TINY = TMASConfig(
    n_candidates=2,
    n_verifications=1,
    max_iterations=1,
    solver_max_tokens=48,
    verifier_max_tokens=24,
    summary_max_tokens=24,
    experience_max_tokens=32,
    guideline_max_tokens=16,
    max_retries=0,
    seed=3,
)


@pytest.fixture(scope="module")
def server_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, subprocess.Popen]]:
    """A TMAS run through a managed vLLM server, started first and left to run in the
    background: its three processes' start-up (mostly imports, one core each) overlaps the
    in-process engine's tests. Its test collects the result."""
    home = tmp_path_factory.mktemp("server_run")
    solve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tmas.cli",
            "solve",
            PROBLEM,
            "--backend",
            "vllm-server",
            "--model",
            "smollm2",
            "--n-ctx",
            str(N_CTX),
            "-n",
            "2",
            "-m",
            "1",
            "-t",
            "1",
            *SHORT,
            "--run-id",
            "s",
            "--db",
            str(home / "s.sqlite"),
            "--quiet",
            "--json",
        ],  # fmt: skip
        env=_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield home, solve
    if solve.poll() is None:
        solve.kill()
    solve.communicate()


@pytest.fixture(scope="module")
def chat(server_run: tuple[Path, subprocess.Popen]) -> Iterator[ChatVLLM]:
    """The in-process SmolLM2 engine every test here shares (as every role of a run does),
    stopped afterwards so the rest of the suite has the machine's memory."""
    model = in_process_chat_model(
        "smollm2", {}, N_CTX, max_tokens=32, temperature=0.7, seed=1, timeout_s=600
    )
    assert isinstance(model, ChatVLLM)
    yield model
    shutdown_engines()


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "TMAS_HOME": str(home)}


def test_tmas_run_on_the_in_process_engine_counts_usage(chat: ChatVLLM, tmp_path: Path) -> None:
    engine = chat.engine
    before = (engine.stats.requests, engine.stats.prompt_tokens, engine.stats.completion_tokens)
    outcome = tmas.solve(
        PROBLEM, backend=BACKEND, config=TINY, gold="7", db=tmp_path / "r.sqlite", run_id="v"
    )
    state = outcome.state
    assert state["stop_reason"] == "max_iterations"
    assert len(state["candidates"]) == 2 and all(c["text"].strip() for c in state["candidates"])
    usage = state["usage"]
    calls = sum(role["calls"] for role in usage.values())
    assert calls == TINY.calls_per_iteration()
    # The run's usage is exactly what the engine served for it: one engine for every role.
    assert calls == engine.stats.requests - before[0]
    assert sum(r["input_tokens"] for r in usage.values()) == engine.stats.prompt_tokens - before[1]
    assert (
        sum(r["output_tokens"] for r in usage.values())
        == engine.stats.completion_tokens - before[2]
    )
    assert usage["solver"]["output_tokens"] > 0
    record = saved_state(connect(tmp_path / "r.sqlite"), "v")
    assert record["final_answer"] == state["final_answer"]


def test_concurrent_requests_overlap_inside_the_engine(chat: ChatVLLM) -> None:
    engine: VLLMEngine = chat.engine
    seen: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.append(engine.unfinished_requests())
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        ids = engine.prompt_ids([{"role": "user", "content": "Write a long story about a cat."}])
        long = engine.submit(ids, {"max_tokens": 160, "min_tokens": 160, "seed": 1})
        while engine.unfinished_requests() == 0 and not long.done():
            time.sleep(0.01)
        # Requests sent while the long one decodes join its batch and finish first.
        short = [
            engine.submit(ids, {"max_tokens": 4, "min_tokens": 4, "seed": s}) for s in range(5)
        ]
        short_outputs = [f.result(timeout=300) for f in short]
        assert not long.done()
        long_output = long.result(timeout=300)
    finally:
        done.set()
        watcher.join()
    assert max(seen) >= 6
    assert all(len(o.outputs[0].token_ids) == 4 for o in short_outputs)
    assert len(long_output.outputs[0].token_ids) == 160


def test_seed_fixes_the_sample_and_prefix_cache_serves_shared_prompts(chat: ChatVLLM) -> None:
    engine = chat.engine
    question = "Explain, step by step, why the sum of two even numbers is even. " * 20
    first = chat.invoke(question, seed=5, max_tokens=12)
    again = chat.invoke(question, seed=5, max_tokens=12)
    assert first.content == again.content
    assert again.usage_metadata["input_token_details"]["cache_read"] > 0
    assert engine.stats.prefix_hit_rate > 0
    choices = chat.generate([[HumanMessage("Name a colour.")]], n=3, max_tokens=6)
    assert len(choices.generations[0]) == 3
    # Seeded requests whose prompts together exceed one step's token budget: vLLM's CPU build
    # kills the engine when it splits such a prompt over steps.
    long_prompts = [f"Case {i}. " + "Count the sheep one by one. " * 120 for i in range(5)]
    chats = [[{"role": "user", "content": prompt}] for prompt in long_prompts]
    futures = [
        engine.submit(engine.prompt_ids(chat), {"max_tokens": 4, "seed": seed})
        for seed, chat in enumerate(chats)
    ]
    assert all(len(f.result(timeout=600).prompt_token_ids) > 800 for f in futures)


def test_killed_run_resumes_on_the_in_process_engine(chat: ChatVLLM, tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    config = ["-n", "2", "-m", "1", "-t", "2", "--seed", "3", *SHORT]
    solve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tmas.cli",
            "solve",
            PROBLEM,
            "--backend",
            "vllm",
            "--model",
            "smollm2",
            "--n-ctx",
            str(N_CTX),
            *config,
            "--run-id",
            "k",
            "--db",
            str(db),
            "--quiet",
        ],  # fmt: skip
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    state: dict = {}
    while time.monotonic() < deadline and solve.poll() is None:
        time.sleep(1)
        state = _saved(db, "k")
        if state.get("history"):  # iteration 1 is saved: kill during iteration 2
            break
    assert solve.poll() is None, solve.stderr.read().decode()[-2000:]
    engine_processes = descendants(solve.pid)
    assert engine_processes, "the engine runs in worker processes"
    os.kill(solve.pid, signal.SIGKILL)
    solve.wait()
    deadline = time.monotonic() + 60
    while any(alive(pid) for pid in engine_processes) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not any(alive(pid) for pid in engine_processes), "engine outlived its run"
    assert len(state["history"]) == 1

    requests_before = chat.engine.stats.requests
    outcome = tmas.resume("k", db=db)
    assert outcome.state["stop_reason"] == "max_iterations"
    assert len(outcome.state["history"]) == 2
    assert outcome.state["history"][0] == state["history"][0]
    assert chat.engine.stats.requests > requests_before  # resumed on this process's engine


def test_tmas_through_a_managed_vllm_server(server_run: tuple[Path, subprocess.Popen]) -> None:
    home, solve = server_run
    stdout, stderr = solve.communicate(timeout=900)
    assert solve.returncode == 0, stderr[-2000:]
    state = saved_state(connect(home / "s.sqlite"), "s")
    assert state["stop_reason"] == "max_iterations"
    assert state["usage"]["solver"]["calls"] == 2 and state["usage"]["solver"]["output_tokens"]
    assert '"run_id": "s"' in stdout  # the JSON result, not vLLM's log lines
    assert "vllm-server:smollm2" in stderr


def test_engine_that_cannot_start_fails_in_one_line_and_saves_nothing(tmp_path: Path) -> None:
    db = tmp_path / "bad.sqlite"
    common = ["solve", "1+1?", "--backend", "vllm", "--model", "smollm2", "--db", str(db)]

    def solve(*extra: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "tmas.cli", *common, "--quiet", *extra]
        return subprocess.run(
            command, env=_env(tmp_path), capture_output=True, text=True, timeout=600
        )

    unknown = CliRunner().invoke(app, [*common, "--engine-arg", "max_model_lenn=9"])
    assert unknown.exit_code == 2
    assert "unknown vLLM engine option max_model_lenn (did you mean max_model_len?)" in (
        unknown.output
    )
    too_big = solve("--gpu-memory-utilization", "0.99")
    assert too_big.returncode == 2
    lines = [line for line in too_big.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, too_big.stderr
    assert "did not start" in lines[0] and "gpu_memory_utilization" in lines[0]
    assert not db.exists() or not connect(db).execute("select 1 from tmas_runs").fetchall()


def _saved(db: Path, run_id: str) -> dict:
    """The run's latest saved state, or {} while the database is still being set up."""
    if not db.exists():
        return {}
    try:
        conn = connect(db)
    except sqlite3.Error:
        return {}
    try:
        return saved_state(conn, run_id)
    except sqlite3.Error:
        return {}
    finally:
        conn.close()
