"""A loopback OpenAI-compatible server that injects faults: HTTP 500 and 429, timeouts, dropped
connections, malformed and empty completions, and latency.

It is the scripted :class:`~tmas.testing.fake_openai_server.FakeOpenAIServer` with a seeded
choice of fault per chat request, bounded in requests and in lifetime (it stops by itself).
Run it in-process (``with FaultInjectingServer(spread_rate(0.2)) as server: ...``) or as a
process::

    python -m tmas.testing.fault_server --rate 0.2 --port 0 --max-requests 500
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import socket
import sys
import threading
import time
import weakref
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from tmas.testing.fake_openai_server import FakeOpenAIServer, ScriptedReplies, _Handler
from tmas.testing.latency import LogNormalLatency
from tmas.testing.server_process import (
    add_server_arguments,
    latency_of,
    replies_of,
    serve_until_signal,
)

FAULT_KINDS = ("http_500", "http_429", "timeout", "drop", "malformed", "empty", "slow")
"""Every fault kind, in the order the seeded draw visits them."""
FAILING_KINDS = FAULT_KINDS[:-1]
"""The kinds after which a client gets no usable answer ("slow" still answers)."""
_MALFORMED = b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"index": 0, '


def spread_rate(rate: float, kinds: Sequence[str] = FAILING_KINDS) -> dict[str, float]:
    """``rate`` shared evenly among ``kinds``.

    Example:
        >>> spread_rate(0.2, ["http_500", "drop"])
        {'http_500': 0.1, 'drop': 0.1}
    """
    return {kind: rate / len(kinds) for kind in kinds}


def _checked_rates(rates: Mapping[str, float]) -> dict[str, float]:
    unknown = sorted(set(rates) - set(FAULT_KINDS))
    if unknown:
        raise ValueError(f"unknown fault kinds {unknown}; choose from {', '.join(FAULT_KINDS)}")
    if any(not 0.0 <= r <= 1.0 for r in rates.values()):
        raise ValueError("each fault rate must lie in [0, 1]")
    if sum(rates.values()) > 1.0 + 1e-9:
        raise ValueError(f"fault rates add up to {sum(rates.values()):.3f}, more than 1")
    return {kind: float(rates.get(kind, 0.0)) for kind in FAULT_KINDS}


class FaultInjectingServer(FakeOpenAIServer):
    """A scripted OpenAI-compatible server that makes a seeded share of chat requests fail.

    Args:
        rates: fault kind (see ``FAULT_KINDS``) -> share of chat requests, each in [0, 1],
            summing to at most 1; the draw per request comes from ``random.Random(seed)``.
        seed: the seed of the draws (request k always gets the k-th draw).
        hold_s: how long a "timeout" request is held before its connection is closed unanswered
            (make it longer than the client's timeout).
        slow_s: extra seconds before a "slow" request is answered normally.
        retry_after_s: the ``Retry-After`` header sent with HTTP 429.
        max_requests: chat requests accepted; later ones get HTTP 503 and the server stops.
        max_lifetime_s: seconds after ``start`` at which the server stops by itself.
        replies, latency_s, host, port: as for ``FakeOpenAIServer``.

    Example:
        >>> import openai
        >>> with FaultInjectingServer({"http_500": 1.0}) as server:
        ...     client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        ...     try:
        ...         client.chat.completions.create(
        ...             model="scripted", messages=[{"role": "user", "content": "hi"}])
        ...     except openai.InternalServerError as exc:
        ...         print(exc.status_code)
        500
        >>> server.injected["http_500"], server.ok_count
        (1, 0)
    """

    def __init__(
        self,
        rates: Mapping[str, float] | None = None,
        *,
        seed: int = 0,
        hold_s: float = 5.0,
        slow_s: float = 0.2,
        retry_after_s: float = 1.0,
        max_requests: int = 10_000,
        max_lifetime_s: float = 600.0,
        replies: ScriptedReplies | None = None,
        latency_s: float | LogNormalLatency = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if min(hold_s, slow_s, retry_after_s) < 0 or max_lifetime_s <= 0 or max_requests < 1:
            raise ValueError("durations must be >= 0, max_lifetime_s and max_requests > 0")
        super().__init__(replies, latency_s, host, port, max_requests)
        self.rates = _checked_rates(rates or {})
        self.hold_s = hold_s
        self.slow_s = slow_s
        self.retry_after_s = retry_after_s
        self.max_lifetime_s = max_lifetime_s
        self._rng = random.Random(seed)
        self._faults: Counter[str] = Counter()
        self._ok = 0
        self._seen = 0
        self._stopping = threading.Event()
        self._watchdog: threading.Thread | None = None
        self._stop_lock = threading.Lock()
        self._connections: weakref.WeakSet[socket.socket] = weakref.WeakSet()

    def start(self) -> FaultInjectingServer:
        """Bind and serve; the server stops by itself at its request or lifetime bound."""
        if self._httpd is None:
            super().start()
            self._stopping.clear()
            self._watchdog = threading.Thread(
                target=self._stop_at_bound, name="fault-server-watchdog", daemon=True
            )
            self._watchdog.start()
        return self

    def stop(self) -> None:
        """Stop serving, release held requests and drop every open connection, as a server
        that goes down does (idempotent)."""
        self._stopping.set()
        with self._stop_lock:
            super().stop()
            with self._lock:
                connections, self._connections = list(self._connections), weakref.WeakSet()
            for connection in connections:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> FaultInjectingServer:
        return self.start()

    @property
    def finished(self) -> bool:
        """True once the server stopped, by itself or by ``stop``."""
        return self._stopping.is_set()

    @property
    def injected(self) -> dict[str, int]:
        """Faults injected so far, per kind (every kind present)."""
        with self._lock:
            return {kind: self._faults[kind] for kind in FAULT_KINDS}

    @property
    def ok_count(self) -> int:
        """Chat requests answered normally with a scripted completion ("slow" ones included)."""
        with self._lock:
            return self._ok

    @property
    def seen_count(self) -> int:
        """Chat requests received (within the request bound)."""
        with self._lock:
            return self._seen

    def counts(self) -> dict[str, Any]:
        """Requests received, answered normally, and injected per kind, as one dict."""
        return {"requests": self.seen_count, "ok": self.ok_count, "injected": self.injected}

    def _stop_at_bound(self) -> None:
        deadline = time.monotonic() + self.max_lifetime_s
        while not self._stopping.wait(0.05):
            with self._lock:
                spent = self._seen >= self.max_requests and self._in_flight == 0
            if spent or time.monotonic() >= deadline:
                break
        self.stop()

    def _draw(self) -> str | None:
        """Admit one request and pick its fault (None: answer normally); "over" past the bound."""
        with self._lock:
            if self._seen >= self.max_requests:
                return "over"
            self._seen += 1
            draw, edge = self._rng.random(), 0.0
            for kind, rate in self.rates.items():
                edge += rate
                if draw < edge:
                    self._faults[kind] += 1
                    return kind
            return None

    def _serve_completion(
        self,
        handler: _Handler,
        body: dict[str, Any],
        messages: list[dict[str, Any]],
        content: str | None = None,
    ) -> None:
        with self._lock:
            self._connections.add(handler.connection)
        kind = self._draw()
        if kind == "over":
            handler.close_connection = True
            handler._send_error(503, "request limit reached", "server_error")
        elif kind == "http_500":
            handler._send_error(500, "injected internal error", "server_error")
        elif kind == "http_429":
            retry = {"Retry-After": f"{self.retry_after_s:g}"}
            handler._send_error(429, "injected rate limit", "rate_limit_error", retry)
        elif kind in ("timeout", "drop"):
            if kind == "timeout":
                self._stopping.wait(self.hold_s)
            handler.close_connection = True  # closed with no response at all
        elif kind == "malformed":
            handler._send_body(200, _MALFORMED)
        elif kind == "empty":
            super()._serve_completion(handler, body, messages, content="")
        else:
            if kind == "slow":
                self._stopping.wait(self.slow_s)
            with self._lock:  # counted before answering, so a client that got it sees it
                self._ok += 1
            super()._serve_completion(handler, body, messages, content)


def _rates_of(args: argparse.Namespace) -> dict[str, float]:
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    rates = spread_rate(args.rate, kinds) if args.rate > 0 else {}
    for item in args.set_rate:
        kind, _, value = item.partition("=")
        rates[kind.strip()] = float(value)
    return rates


def main(argv: list[str] | None = None) -> int:
    """Serve with faults until SIGTERM, SIGINT or a bound, printing the base URL first and
    the counts (one JSON line) last.

    Example:
        ``python -m tmas.testing.fault_server --rate 0.2 --port 0 --max-lifetime 60``
    """
    parser = argparse.ArgumentParser(description="Loopback OpenAI-compatible fault server")
    add_server_arguments(parser, port=0)
    parser.add_argument("--rate", type=float, default=0.0, help="share of requests that fail")
    parser.add_argument(
        "--kinds", default=",".join(FAILING_KINDS), help="kinds --rate spreads over"
    )
    parser.add_argument("--set-rate", action="append", default=[], metavar="KIND=RATE")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hold", type=float, default=5.0, help="seconds a timeout is held")
    parser.add_argument("--slow", type=float, default=0.2, help="extra seconds of a slow reply")
    parser.add_argument("--max-lifetime", type=float, default=600.0, help="seconds, then stop")
    args = parser.parse_args(argv)
    try:
        server = FaultInjectingServer(
            _rates_of(args),
            seed=args.seed,
            hold_s=args.hold,
            slow_s=args.slow,
            max_requests=args.max_requests,
            max_lifetime_s=args.max_lifetime,
            replies=replies_of(args),
            latency_s=latency_of(args),
            host=args.host,
            port=args.port,
        )
    except ValueError as exc:
        parser.error(str(exc))
    serve_until_signal(server, stopped=lambda: server.finished)
    print(json.dumps(server.counts()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
