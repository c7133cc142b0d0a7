"""Tests of the loopback OpenAI-compatible scripted server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from openai import OpenAI

from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.scripted import ScriptedReplies

REPO_ROOT = Path(__file__).resolve().parents[2]
VERIFIER = [
    {"role": "system", "content": "Check the solution."},
    {"role": "user", "content": "Check: 2 + 16 = 18."},
]


def _post(url: str, data: bytes) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


AS_VERIFIER = {"X-TMAS-Role": "verifier"}


def test_the_role_comes_from_the_header_not_the_wording() -> None:
    with FakeOpenAIServer() as server:
        client = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        ask = [{"role": "system", "content": "You are the verification agent."}]
        unnamed = client.chat.completions.create(model="scripted", messages=ask)
        named = client.chat.completions.create(
            model="scripted", messages=ask, extra_headers={"X-TMAS-Role": "summary"}
        )
        assert "Score:" not in (unnamed.choices[0].message.content or "")
        assert (named.choices[0].message.content or "").startswith("The verifiers agree")
        assert [r["tmas"]["role"] for r in server.requests] == [None, "summary"]


def test_langchain_chat_openai_gets_scripted_verifier_reply() -> None:
    with FakeOpenAIServer() as server:
        llm = ChatOpenAI(
            base_url=server.base_url,
            api_key="x",
            model="scripted",
            max_retries=0,
            default_headers=AS_VERIFIER,
        )
        msg = llm.invoke([SystemMessage("Check it."), HumanMessage("Check 2+16=18.")])
        assert "Score:" in msg.content
        assert msg.usage_metadata is not None
        assert msg.usage_metadata["output_tokens"] > 0
        assert msg.usage_metadata["total_tokens"] == (
            msg.usage_metadata["input_tokens"] + msg.usage_metadata["output_tokens"]
        )
        assert server.request_count == 1
        assert server.requests[0]["messages"][0]["content"] == "Check it."


def test_raw_client_n_choices_and_solver_answer() -> None:
    with FakeOpenAIServer(ScriptedReplies(answers=("42",))) as server:
        client = OpenAI(
            base_url=server.base_url,
            api_key="x",
            max_retries=0,
            default_headers={"X-TMAS-Role": "solver"},
        )
        out = client.chat.completions.create(
            model="scripted",
            n=2,
            messages=[
                {"role": "system", "content": "You are the solution agent."},
                {"role": "user", "content": "6 * 7?"},
            ],
        )
        assert len(out.choices) == 2
        assert [c.index for c in out.choices] == [0, 1]
        assert all(c.finish_reason == "stop" for c in out.choices)
        assert "\\boxed{42}" in (out.choices[0].message.content or "")
        assert out.usage is not None and out.usage.completion_tokens > 0
        assert out.model == "scripted" and out.id.startswith("chatcmpl-")
        assert [m.id for m in client.models.list()] == ["scripted"]


def test_streaming_reassembles_the_same_content() -> None:
    with FakeOpenAIServer() as server:
        client = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        full = client.chat.completions.create(model="scripted", messages=VERIFIER)
        stream = client.chat.completions.create(
            model="scripted",
            messages=VERIFIER,
            stream=True,
            stream_options={"include_usage": True},
        )
        parts, usage = [], None
        for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            parts.extend(c.delta.content or "" for c in chunk.choices)
        assert "".join(parts) == full.choices[0].message.content
        assert usage is not None and usage.total_tokens == full.usage.total_tokens


def test_concurrent_requests_overlap() -> None:
    with FakeOpenAIServer(latency_s=0.2) as server:
        client = OpenAI(
            base_url=server.base_url, api_key="x", max_retries=0, default_headers=AS_VERIFIER
        )

        def call(i: int) -> str:
            messages = [VERIFIER[0], {"role": "user", "content": f"case {i}"}]
            out = client.chat.completions.create(model="scripted", messages=messages)
            return out.choices[0].message.content or ""

        client.models.list()  # warm up the client before timing
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(call, range(8)))
        elapsed = time.perf_counter() - start
        assert all("Score:" in r for r in results)
        assert elapsed < 1.2
        assert server.max_in_flight >= 4
        assert server.in_flight == 0
        assert server.request_count == 8


def test_errors_bad_json_unknown_path_and_request_limit() -> None:
    with FakeOpenAIServer(max_requests=1) as server:
        url = f"{server.base_url}/chat/completions"
        status, body = _post(url, b"{not json")
        assert status == 400 and "message" in body["error"]
        status, body = _post(url, json.dumps({"model": "scripted"}).encode())
        assert status == 400
        status, _ = _post(f"{server.base_url}/nowhere", b"{}")
        assert status == 404
        payload = json.dumps({"model": "scripted", "messages": VERIFIER}).encode()
        assert _post(url, payload)[0] == 200
        status, body = _post(url, payload)
        assert status == 503 and "limit" in body["error"]["message"]
        assert server.request_count == 1


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com", "::"])
def test_non_loopback_host_is_refused(host: str) -> None:
    with pytest.raises(ValueError):
        FakeOpenAIServer(host=host)


def test_stop_is_idempotent_and_base_url_needs_a_running_server() -> None:
    server = FakeOpenAIServer(host="localhost")
    with pytest.raises(RuntimeError):
        _ = server.base_url
    server.start()
    assert server.base_url.endswith("/v1")
    server.stop()
    server.stop()


def _read_line(stream, timeout: float) -> str:
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return box[0] if box else ""


@pytest.mark.slow
def test_cli_serves_and_writes_count_file(tmp_path: Path) -> None:
    count_file = tmp_path / "count.txt"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [
        sys.executable,
        "-m",
        "tmas.testing.fake_openai_main",
        "--port",
        "0",
        "--latency",
        "0.01",
        "--count-file",
        str(count_file),
        "--answers",
        "7,7",
    ]
    proc = subprocess.Popen(
        cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        base_url = _read_line(proc.stdout, timeout=30).strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        client = OpenAI(base_url=base_url, api_key="x", max_retries=0)
        for i in range(2):
            out = client.chat.completions.create(
                model="scripted",
                messages=[
                    {"role": "system", "content": "You are the solution agent."},
                    {"role": "user", "content": f"problem {i}"},
                ],
                extra_headers={"X-TMAS-Role": "solver"},  # the role, as TMAS's client sends it
            )
            assert "\\boxed{7}" in (out.choices[0].message.content or "")
        assert count_file.read_text().strip() == "2"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
