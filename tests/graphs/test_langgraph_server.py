"""``langgraph dev`` serves every bundled topology from ``langgraph.json``, and the LangGraph SDK
runs them end to end against an OpenAI-compatible endpoint, streams their live events and
resumes a paused run (the server refuses blocking calls in its event loop, so this also shows
that compiling a topology reads no file)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langgraph_sdk import get_sync_client

from tmas.graphs.served import langgraph_graphs
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.scripted import ScriptedReplies

REPO = Path(__file__).resolve().parents[2]
PROBLEM = "What is 9 + 9?"

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_langgraph_dev_serves_and_runs_the_bundled_topologies(tmp_path: Path) -> None:
    cli = Path(sys.executable).with_name("langgraph")
    assert cli.exists(), "langgraph-cli[inmem] is part of the test extra"
    port = free_port()
    # the repository's langgraph.json, its paths made absolute, so the server runs elsewhere
    config = json.loads((REPO / "langgraph.json").read_text(encoding="utf-8"))
    config["dependencies"] = [str(REPO / d) for d in config["dependencies"]]
    config["graphs"] = {k: str(REPO / v) for k, v in config["graphs"].items()}
    (tmp_path / "langgraph.json").write_text(json.dumps(config), encoding="utf-8")
    with FakeOpenAIServer(replies=ScriptedReplies(answers=("18",))) as endpoint:
        env = {**os.environ, "TMAS_BASE_URL": endpoint.base_url, "TMAS_MODEL": "scripted"}
        log = (tmp_path / "server.log").open("w")
        server = subprocess.Popen(
            [str(cli), "dev", "--no-browser", "--no-reload", "--port", str(port)],
            cwd=tmp_path,  # where the server keeps its own files, outside the repository
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            client = get_sync_client(url=f"http://127.0.0.1:{port}")
            deadline, assistants = time.monotonic() + 180, None
            while assistants is None and time.monotonic() < deadline:
                try:
                    assistants = client.assistants.search(limit=50)
                except Exception:  # noqa: BLE001 - not up yet
                    time.sleep(1)
            assert assistants is not None, (tmp_path / "server.log").read_text()[-3000:]
            assert sorted({a["graph_id"] for a in assistants}) == sorted(langgraph_graphs())
            for name, calls in (("pacore", 9), ("delm", 6), ("tmas", 72)):
                before = endpoint.request_count
                thread = client.threads.create()
                final = client.runs.wait(thread["thread_id"], name, input={"problem": PROBLEM})
                assert final["stop_reason"] == "max_iterations", (name, final)
                assert final["final_answer"] == "18"
                assert endpoint.request_count - before == calls, name
            # streaming: the agents' live events arrive on the custom stream
            thread = client.threads.create()
            parts = list(client.runs.stream(
                thread["thread_id"], "majority_vote", input={"problem": PROBLEM},
                stream_mode=["custom", "values"], stream_subgraphs=True,
            ))  # fmt: skip
            custom = [p.data for p in parts if p.event.split("|")[0] == "custom"]
            assert [e["event"] for e in custom].count("candidate") == 4
            assert parts[-1].data["final_answer"] == "18"
            # resuming: a run stopped after its first iteration continues from the server's
            # checkpoint and makes only the calls it had not made
            before = endpoint.request_count
            thread = client.threads.create()
            paused = client.runs.wait(
                thread["thread_id"], "tmas", input={"problem": PROBLEM},
                interrupt_after=["record_iteration"],
            )  # fmt: skip
            assert paused["iteration"] == 1 and not paused.get("stop_reason")
            assert endpoint.request_count - before == 24
            final = client.runs.wait(thread["thread_id"], "tmas", input=None)
            assert final["stop_reason"] == "max_iterations" and final["iteration"] == 3
            assert endpoint.request_count - before == 72
        finally:
            server.terminate()
            server.wait(timeout=60)
            log.close()
