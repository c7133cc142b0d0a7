"""``python -m tmas.testing.fake_openai_main``: the scripted server as a process, printing its
base URL first and serving until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.server_process import (
    add_server_arguments,
    atomic_write,
    latency_of,
    replies_of,
    serve_until_signal,
)


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM or SIGINT, printing the base URL first.

    Example:
        ``python -m tmas.testing.fake_openai_main --port 0 --answers 18,18,17``
    """
    parser = argparse.ArgumentParser(description="Loopback OpenAI-compatible scripted server")
    add_server_arguments(parser, port=8123)
    parser.add_argument("--count-file", type=Path, help="rewritten with the served count")
    args = parser.parse_args(argv)

    count_file: Path | None = args.count_file.resolve() if args.count_file else None
    write_lock = threading.Lock()

    def on_complete(count: int) -> None:
        if count_file is not None:
            with write_lock:  # the latest count wins even if writers race
                atomic_write(count_file, f"{max(count, server.request_count)}\n")

    if count_file is not None:
        atomic_write(count_file, "0\n")
    server = FakeOpenAIServer(
        replies_of(args),
        latency_s=latency_of(args),
        host=args.host,
        port=args.port,
        max_requests=args.max_requests,
        on_complete=on_complete,
    )
    serve_until_signal(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
