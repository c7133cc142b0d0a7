"""A ``tmas serve`` application on a loopback port inside the test process, in front of the
scripted OpenAI-compatible model (or any backend)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn

from tmas.llm.backend import BackendSpec
from tmas.serve import ChatService, ServeLimits
from tmas.serve.app import create_app
from tmas.testing.fake_openai_server import FakeOpenAIServer

PROBLEM = "What is 9 + 9?"
# tmas at N=2, M=1, T=1: 2 solver + 2 verifier calls, then a summary, an experience and a
# guideline call per candidate.
SMALL_TMAS = {"n_candidates": 2, "n_verifications": 1, "max_iterations": 1}
SMALL_TMAS_CALLS = 2 + 2 + 3 * 2


def user(text: str = PROBLEM) -> list[dict[str, str]]:
    """A conversation of one user message."""
    return [{"role": "user", "content": text}]


def scripted_service(endpoint: FakeOpenAIServer, db: Path, **options: Any) -> ChatService:
    """A service whose runs call ``endpoint`` (the scripted model)."""
    backend = BackendSpec(kind="openai", model="scripted", base_url=endpoint.base_url)
    limits = options.pop("limits", ServeLimits())
    return ChatService(backend, db=db, limits=limits, **options)


@contextmanager
def serving(service: ChatService, **app_options: Any) -> Iterator[str]:
    """Serve ``service`` on a free loopback port; yields the API's base URL (``.../v1``)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(service, **app_options)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()
