"""The managed vLLM server's life cycle against a stand-in server process: started on
loopback and waited for, a failed start as one line, stopped with its process group, and
gone when the process that started it is killed."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from openai import OpenAI

from tmas.llm.vllm import server as server_module
from tmas.llm.vllm.server import ManagedVLLMServer
from tmas.llm.vllm.start_failures import VLLMStartError
from tmas.process_tree import alive

STAND_IN = "tmas.testing.fake_vllm_server"


@pytest.fixture(autouse=True)
def stand_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(server_module, "SERVER_MODULE", STAND_IN)
    monkeypatch.setenv("TMAS_CACHE_DIR", str(tmp_path / "models"))


def test_server_starts_serves_and_stops() -> None:
    server = ManagedVLLMServer("/ckpt", "tiny", {"gpu_memory_utilization": 0.3})
    server.start(timeout_s=30)
    try:
        client = OpenAI(base_url=server.base_url, api_key="x")
        assert [m.id for m in client.models.list().data] == ["tiny"]
        reply = client.chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": "hi"}]
        )
        assert reply.choices[0].message.content
        pid = server._process.pid
    finally:
        server.stop()
    assert not alive(pid)
    assert "starting server for /ckpt" in server.log_path.read_text()


def test_failed_start_is_one_line_with_the_option_to_change() -> None:
    server = ManagedVLLMServer("/ckpt", "tiny", {"gpu_memory_utilization": 0.95})
    with pytest.raises(VLLMStartError) as caught:
        server.start(timeout_s=30)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("vLLM server for tiny did not start: the memory fraction")
    assert "--engine-arg gpu_memory_utilization=0.3" in message
    assert str(server.log_path) in message


def test_server_does_not_outlive_a_killed_parent(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    parent = textwrap.dedent(
        f"""
        import sys, time
        from tmas.llm.vllm import server as s
        s.SERVER_MODULE = {STAND_IN!r}
        srv = s.ManagedVLLMServer("/ckpt", "tiny", {{"gpu_memory_utilization": 0.3}})
        srv.start(timeout_s=30)
        open({str(pid_file)!r}, "w").write(str(srv._process.pid))
        time.sleep(600)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", parent])
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    server_pid = int(pid_file.read_text())
    assert alive(server_pid)
    process.send_signal(signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 20
    while alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(server_pid)
