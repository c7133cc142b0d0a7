"""The real path: a one-iteration TMAS run on the embedded SmolLM2 model, in-process and
through an OpenAI-compatible ``llama_cpp.server`` started on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tmas import build_tmas_graph
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_router, plan_run
from tmas.llm.backend import BackendSpec
from tmas.llm.model_files import smollm2_path
from tmas.storage.checkpointer import open_checkpointer
from tmas.storage.sqlite import connect

PROBLEM = "Tom has 3 apples and buys 4 more. How many apples does he have now?"
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
)

pytestmark = pytest.mark.slow


def _check_one_iteration(state: dict, model_calls: int) -> None:
    assert state["stop_reason"] == "max_iterations"
    assert len(state["history"]) == 1
    assert len(state["candidates"]) == 2 and all(c["text"].strip() for c in state["candidates"])
    assert len(state["verifications"]) == 2
    assert len(state["summaries"]) == 2
    assert model_calls == TINY.calls_per_iteration()
    assert state["usage"]["solver"]["output_tokens"] > 0
    record = state["history"][0]
    assert record["pass_at_1"] is not None and 0.0 <= record["pass_at_1"] <= 1.0


def test_one_iteration_in_process_smollm2(tmp_path: Path) -> None:
    backend = BackendSpec(kind="llamacpp", model="smollm2", n_ctx=2048)
    router = plan_router(plan_run(load_bundled("tmas"), TINY, backend))
    saver = open_checkpointer(connect(tmp_path / "runs.sqlite"))
    graph = build_tmas_graph(TINY, llm=router, checkpointer=saver)
    config = {"configurable": {"thread_id": "real"}}
    state = graph.invoke({"problem": PROBLEM, "gold_answer": "7"}, config)
    calls = sum(u["calls"] for u in state["usage"].values())
    _check_one_iteration(state, calls)
    assert graph.get_state(config).values["history"] == state["history"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(smollm2_path()),
                "--model_alias",
                "smollm2",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "2048",
                "--n_threads",
                str(os.cpu_count() or 1),  # its default is half the cores
                "--verbose",
                "False",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base_url}/models", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server did not start:\n{log.read_text()[-2000:]}")
                time.sleep(0.5)
        yield base_url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_one_iteration_through_openai_compatible_server(
    llama_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMAS_HOME", str(tmp_path))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tmas.cli",
            "solve",
            PROBLEM,
            "--gold",
            "7",
            "--base-url",
            llama_server,
            "--model",
            "smollm2",
            "-n",
            "2",
            "-m",
            "1",
            "-t",
            "1",
            "--max-tokens",
            "48",
            *("--set", "verifier_max_tokens=24", "--set", "summary_max_tokens=24"),
            *("--set", "experience_max_tokens=32", "--set", "guideline_max_tokens=16"),
            "--run-id",
            "served",
            "--quiet",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    state = (
        open_checkpointer(connect(tmp_path / "runs.sqlite"))
        .get_tuple({"configurable": {"thread_id": "served"}})
        .checkpoint["channel_values"]
    )
    calls = sum(u["calls"] for u in state["usage"].values())
    _check_one_iteration(state, calls)
    assert '"run_id": "served"' in result.stdout
    # The server honours each role's token limit (it reads max_tokens, not max_completion_tokens).
    assert state["usage"]["solver"]["output_tokens"] <= 2 * 48
    assert state["usage"]["verifier"]["output_tokens"] <= 2 * 24
