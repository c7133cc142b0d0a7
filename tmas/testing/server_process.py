"""Running a scripted server as a process: its common options, its replies, serving until a
signal, and a counter file written whole."""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tmas.testing.latency import LogNormalLatency
from tmas.testing.scripted import ScriptedReplies


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a reader never sees half of it)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def add_server_arguments(parser: argparse.ArgumentParser, port: int) -> None:
    """The command-line options every scripted server takes (host, port, latency, answers,
    request bound).

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_server_arguments(parser, port=0)
        >>> parser.parse_args(["--answers", "7"]).max_requests
        100000
    """
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=port)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per completion")
    parser.add_argument(
        "--latency-sigma", type=float, default=0.0,
        help="draw each latency from a log-normal with --latency as median and this sigma",
    )  # fmt: skip
    parser.add_argument("--latency-seed", type=int, default=0, help="seed of drawn latencies")
    parser.add_argument("--answers", default="18,18,17", help="comma-separated solver answers")
    parser.add_argument("--max-requests", type=int, default=100_000)


def latency_of(args: argparse.Namespace) -> LogNormalLatency:
    """The latency model named by ``--latency``, ``--latency-sigma`` and ``--latency-seed``.

    Example:
        >>> latency_of(argparse.Namespace(latency=0.5, latency_sigma=1.0, latency_seed=3)).sigma
        1.0
    """
    return LogNormalLatency(args.latency, args.latency_sigma, args.latency_seed)


def replies_of(args: argparse.Namespace) -> ScriptedReplies:
    """The scripted replies named by ``--answers``.

    Example:
        >>> replies_of(argparse.Namespace(answers="3, 4,")).answers
        ('3', '4')
    """
    answers = tuple(a.strip() for a in args.answers.split(",") if a.strip()) or ("18",)
    return ScriptedReplies(answers=answers)


def serve_until_signal(server: Any, stopped: Callable[[], bool] = lambda: False) -> None:
    """Serve, print the base URL, and return on SIGTERM, SIGINT or once ``stopped()``."""
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    with server:
        print(server.base_url, flush=True)
        while not done.wait(0.1) and not stopped():
            pass
