"""A vLLM OpenAI-compatible server managed by the run: started on loopback, waited for, and
stopped when the process ends (or dies: the server gets SIGTERM with its parent)."""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tmas.llm.vllm.logs import new_log_path
from tmas.llm.vllm.options import server_flags
from tmas.llm.vllm.start_failures import VLLMStartError, explain_start_failure

SERVER_MODULE = "vllm.entrypoints.openai.api_server"
START_TIMEOUT_S = 900.0


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now.

    Example:
        >>> 0 < free_port() < 65536
        True
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# Runs first in the server's process: asks Linux to send it SIGTERM when the process that
# started it dies (even by SIGKILL), then becomes the server (the request survives exec).
_LAUNCHER = (
    "import ctypes, os, signal, sys; "
    "ctypes.CDLL(None).prctl(1, signal.SIGTERM); "
    "os.execv(sys.executable, [sys.executable] + sys.argv[1:])"
)


def server_command(model: str, served_name: str, port: int, options: dict[str, Any]) -> list[str]:
    """The command line that starts vLLM's OpenAI server (through a launcher that ties the
    server's life to this process).

    Example:
        >>> server_command("/m", "smollm2", 8001, {"max_model_len": 2048})[3:]
        ['-m', 'vllm.entrypoints.openai.api_server', '--model', '/m', '--served-model-name', \
'smollm2', '--host', '127.0.0.1', '--port', '8001', '--max-model-len', '2048']
    """
    return [
        sys.executable, "-c", _LAUNCHER,
        "-m", SERVER_MODULE,
        "--model", model,
        "--served-model-name", served_name,
        "--host", "127.0.0.1",
        "--port", str(port),
        *server_flags({k: v for k, v in options.items() if k != "model"}),
    ]  # fmt: skip


class ManagedVLLMServer:
    """vLLM's OpenAI server for one model, started by :meth:`start` and stopped by
    :meth:`stop` (and at exit).

    Example (with vLLM installed)::

        server = ManagedVLLMServer("/models/smollm2-hf", "smollm2", {"max_model_len": 2048})
        server.start()
        server.base_url  # 'http://127.0.0.1:PORT/v1'
        server.stop()
    """

    def __init__(self, model: str, served_name: str, options: dict[str, Any]) -> None:
        self.model = model
        self.served_name = served_name
        self.options = dict(options)
        self.port: int | None = None
        self.log_path: Path | None = None
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """The server's OpenAI API root (after :meth:`start`)."""
        if self.port is None:
            raise RuntimeError("the vLLM server has not been started")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def label(self) -> str:
        """How errors name this server."""
        return f"vLLM server for {self.served_name}"

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start the server and wait until it lists its model; VLLMStartError (one line) when
        it exits or does not answer within ``timeout_s``."""
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                return
            self.port = free_port()
            self.log_path = new_log_path("vllm-server")
            command = server_command(self.model, self.served_name, self.port, self.options)
            with self.log_path.open("ab") as log:
                self._process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            self._wait_ready(timeout_s)

    def _wait_ready(self, timeout_s: float) -> None:
        assert self._process is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._fail(f"exited with code {self._process.returncode}")
            if self._lists_model():
                return
            time.sleep(0.5)
        self._fail(f"did not answer within {timeout_s:.0f} s")

    def _lists_model(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as reply:
                names = [entry.get("id") for entry in json.load(reply).get("data", [])]
        except (OSError, urllib.error.URLError, ValueError):
            return False
        return self.served_name in names

    def _fail(self, what: str) -> None:
        self._terminate()
        log = self.log_path.read_text(errors="replace") if self.log_path else ""
        explained = explain_start_failure(self.label, log, str(self.log_path))
        if explained.endswith(f"no error was logged (log: {self.log_path})"):
            explained = explained.replace("no error was logged", f"the server {what}")
        raise VLLMStartError(explained)

    def stop(self) -> None:
        """Stop the server (its whole process group) and wait for it to exit."""
        with self._lock:
            self._terminate()

    def _terminate(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue


_SERVERS: dict[str, ManagedVLLMServer] = {}
_SERVERS_LOCK = threading.Lock()


def shared_server(model: str, served_name: str, options: dict[str, Any]) -> ManagedVLLMServer:
    """The process's server for this model and options (created, not started, on first
    use), so every role of a run talks to one server.

    Example::

        shared_server("/m", "m", {}) is shared_server("/m", "m", {})  # True
    """
    key = json.dumps([model, served_name, options], sort_keys=True, default=str)
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is None:
            server = _SERVERS[key] = ManagedVLLMServer(model, served_name, options)
        return server


@atexit.register
def stop_servers() -> None:
    """Stop every managed server (run at exit)."""
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.stop()
