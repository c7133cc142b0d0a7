"""A loopback-only, OpenAI-compatible HTTP server that answers with scripted replies.

Run it in-process (``with FakeOpenAIServer() as server: ...``) or as a process::

    python -m tmas.testing.fake_openai_main --port 8123 --latency 0.1 --count-file n.txt
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tmas.llm.hosts import is_loopback
from tmas.llm.openai_wire import PROMPT_HEADER, ROLE_HEADER
from tmas.testing.chat_payloads import count_words, send_stream, text_of
from tmas.testing.latency import LogNormalLatency, latency_model
from tmas.testing.scripted import ScriptedReplies, scripted_reply

MODEL_NAME = "scripted"
MAX_STORED_REQUESTS = 1000
MAX_BODY_BYTES = 8 * 1024 * 1024


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Connections waiting to be accepted (the default, 5, resets a burst of clients opening
    # connections at once, as an asyncio client does; a vLLM server accepts thousands).
    request_queue_size = 1024
    fake: FakeOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (killed, timed out) is expected here; report the rest."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _HTTPServer6(_HTTPServer):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle's algorithm on, the body waits
    # for the client's delayed ACK (about 40 ms on Linux) on every kept-alive request.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def _send_json(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self._send_body(status, json.dumps(payload).encode("utf-8"), headers)

    def _send_body(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _send_error(
        self, status: int, message: str, kind: str, headers: dict[str, str] | None = None
    ) -> None:
        error = {"error": {"message": message, "type": kind, "code": None}}
        self._send_json(status, error, headers)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            model = {"id": MODEL_NAME, "object": "model", "created": 0, "owned_by": "tmas"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_error(404, f"unknown path {self.path}", "not_found_error")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            return self._send_error(413, "request body too large", "invalid_request_error")
        raw = self.rfile.read(length) if length > 0 else b""
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_error(404, f"unknown path {self.path}", "not_found_error")
            return
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self._send_error(400, f"invalid JSON body: {exc}", "invalid_request_error")
            return
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            self._send_error(400, "'messages' must be a list of objects", "invalid_request_error")
            return
        refusal = self.server.fake.refusal(self.headers.get("Authorization"), body, messages)
        if refusal is not None:
            self._send_error(*refusal)
            return
        body["tmas"] = {
            "role": self.headers.get(ROLE_HEADER),
            "prompt": self.headers.get(PROMPT_HEADER),
        }
        self.server.fake._serve_completion(self, body, messages)


class FakeOpenAIServer:
    """An OpenAI-compatible chat server on a loopback address, answering from a script.

    Args:
        replies: The scripted replies; the default ``ScriptedReplies()`` if None.
        latency_s: Seconds to wait before each chat completion is answered, or a
            :class:`~tmas.testing.latency.LogNormalLatency` drawing each request's own.
        host: A loopback address to bind (anything else raises ``ValueError``).
        port: The port to bind; 0 picks a free one.
        max_requests: Chat completions to serve; later ones get HTTP 503.
        on_complete: Called with the running count after each served completion.
        api_key: When set, a request without ``Authorization: Bearer <api_key>`` gets HTTP
            401, as a real endpoint answers a wrong key.
        served_models: When set, a request for another model gets HTTP 404.
        max_context_tokens: When set, a prompt of more words than this gets HTTP 400 with
            vLLM's "maximum context length" message.
        latency_of: When set, called with each chat completion's body before it is answered;
            the seconds it returns replace ``latency_s`` for that request (it may also block,
            e.g. until another request arrived).

    Example:
        >>> from openai import OpenAI
        >>> with FakeOpenAIServer() as server:
        ...     client = OpenAI(base_url=server.base_url, api_key="x")
        ...     out = client.chat.completions.create(
        ...         model="scripted", messages=[{"role": "user", "content": "hi"}])
        >>> server.request_count
        1
    """

    def __init__(
        self,
        replies: ScriptedReplies | None = None,
        latency_s: float | LogNormalLatency = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        max_requests: int = 100_000,
        *,
        on_complete: Callable[[int], None] | None = None,
        api_key: str | None = None,
        served_models: tuple[str, ...] | None = None,
        max_context_tokens: int | None = None,
        latency_of: Callable[[dict[str, Any]], float] | None = None,
    ) -> None:
        if not is_loopback(host):
            raise ValueError(f"FakeOpenAIServer binds loopback addresses only, not {host!r}")
        self.latency = latency_model(latency_s)
        self.replies = replies if replies is not None else ScriptedReplies()
        self.host = host.strip("[]")
        self.port = port
        self.max_requests = max_requests
        self.on_complete = on_complete
        self.api_key = api_key
        self.served_models = served_models
        self.max_context_tokens = max_context_tokens
        self.latency_of = latency_of
        self.refused: list[int] = []  # the HTTP status of each refused request
        self._lock = threading.Lock()
        self._admitted = 0
        self._completed = 0
        self._in_flight = 0
        self._max_in_flight = 0
        self._tokens = {"prompt_tokens": 0, "completion_tokens": 0}
        self._requests: deque[dict[str, Any]] = deque(maxlen=MAX_STORED_REQUESTS)
        self._timings: deque[dict[str, Any]] = deque(maxlen=MAX_STORED_REQUESTS)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeOpenAIServer:
        """Bind and serve in a daemon thread; returns self."""
        if self._httpd is not None:
            return self
        cls = _HTTPServer6 if ":" in self.host else _HTTPServer
        httpd = cls((self.host, self.port), _Handler)
        if not is_loopback(str(httpd.server_address[0])):  # e.g. an odd "localhost" entry
            httpd.server_close()
            raise ValueError(f"{self.host!r} did not resolve to a loopback address")
        httpd.fake = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.05,), name="fake-openai-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def timings(self) -> list[dict[str, Any]]:
        """Each answered completion: its ``role``, ``seed``, the ``latency_s`` it was given,
        and when it ``arrived`` and was ``answered`` (``time.time()``)."""
        with self._lock:
            return list(self._timings)

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, e.g. ``http://127.0.0.1:8123/v1``."""
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not running")
        host, port = self._httpd.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else str(host)
        return f"http://{shown}:{port}/v1"

    @property
    def served_usage(self) -> dict[str, int]:
        """Prompt and completion tokens reported over every answered completion."""
        with self._lock:
            return dict(self._tokens)

    @property
    def request_count(self) -> int:
        """Chat completions served so far."""
        with self._lock:
            return self._completed

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A copy of the last received chat-completion bodies (at most 1000)."""
        with self._lock:
            return list(self._requests)

    @property
    def in_flight(self) -> int:
        """Chat completions being processed now."""
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The peak number of chat completions processed at once."""
        with self._lock:
            return self._max_in_flight

    def refusal(
        self, authorization: str | None, body: dict[str, Any], messages: list[dict[str, Any]]
    ) -> tuple[int, str, str] | None:
        """The error a real endpoint would answer this request with (status, message, kind),
        or None to serve it; each refusal is kept in ``refused``."""
        found: tuple[int, str, str] | None = None
        model = str(body.get("model"))
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            found = (401, "Incorrect API key provided", "invalid_request_error")
        elif self.served_models is not None and model not in self.served_models:
            found = (404, f"The model `{model}` does not exist.", "not_found_error")
        elif self.max_context_tokens is not None:
            words = sum(count_words(text_of(m)) for m in messages)
            if words > self.max_context_tokens:
                found = (
                    400,
                    f"This model's maximum context length is {self.max_context_tokens} tokens. "
                    f"However, your request has {words} input tokens.",
                    "invalid_request_error",
                )
        if found is not None:
            with self._lock:
                self.refused.append(found[0])
        return found

    def _serve_completion(
        self,
        handler: _Handler,
        body: dict[str, Any],
        messages: list[dict[str, Any]],
        content: str | None = None,
    ) -> None:
        """Answer one chat completion (with ``content`` instead of the scripted reply if set)."""
        with self._lock:
            over = self._admitted >= self.max_requests
            if not over:
                self._admitted += 1
                self._requests.append(body)
                self._in_flight += 1
                self._max_in_flight = max(self._max_in_flight, self._in_flight)
        if over:
            handler._send_error(503, "request limit reached", "server_error")
            return
        tagged = body.get("tmas") or {}
        timing = {"role": tagged.get("role"), "seed": body.get("seed"), "arrived": time.time()}
        timing["latency_s"] = self.latency.draw(timing["role"], str(body.get("seed", "")))
        try:
            if self.latency_of is None:
                time.sleep(timing["latency_s"])
            else:  # it may block; what it took counts as the latency
                time.sleep(self.latency_of(body))
                timing["latency_s"] = time.time() - timing["arrived"]
            flat = [{"role": m.get("role"), "content": text_of(m)} for m in messages]
            n = body.get("n")
            n = max(1, min(n, 128)) if isinstance(n, int) else 1
            if content is None:
                content = scripted_reply(
                    self.replies,
                    flat,
                    str(body.get("seed", "")),
                    role=tagged.get("role"),
                    prompt=tagged.get("prompt"),
                )
            prompt = sum(count_words(m["content"]) for m in flat)
            completion = count_words(content) * n
            usage = dict(prompt_tokens=prompt, completion_tokens=completion)
            usage["total_tokens"] = prompt + completion
            with self._lock:
                self._completed += 1
                count = self._completed
                for key in self._tokens:
                    self._tokens[key] += usage[key]
                self._timings.append({**timing, "answered": time.time()})
            if self.on_complete is not None:
                self.on_complete(count)
            head = {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "created": int(time.time()),
                "model": str(body.get("model") or MODEL_NAME),
            }
            if not body.get("stream"):
                message = {"role": "assistant", "content": content}
                choices = [
                    {"index": i, "message": message, "logprobs": None, "finish_reason": "stop"}
                    for i in range(n)
                ]
                handler._send_json(
                    200, {**head, "object": "chat.completion", "choices": choices, "usage": usage}
                )
                return
            options = body.get("stream_options")
            with_usage = isinstance(options, dict) and bool(options.get("include_usage"))
            send_stream(handler, head, content, n, usage if with_usage else None)
        finally:
            with self._lock:
                self._in_flight -= 1
