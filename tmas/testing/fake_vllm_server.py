"""A stand-in for vLLM's OpenAI server process, for tests of the managed-server wiring: it
takes vLLM's command line, serves scripted replies under ``--served-model-name`` on
loopback, and fails to start as vLLM does when the memory fraction is too high::

    python -m tmas.testing.fake_vllm_server --model /m --served-model-name m --port 8123
"""

from __future__ import annotations

import argparse
import sys
import time

from tmas.testing import fake_openai_server
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.server_process import serve_until_signal

# Like vLLM on a CPU, refuse a memory fraction above this.
MAX_MEMORY_FRACTION = 0.9


def main(argv: list[str] | None = None) -> int:
    """Start (or fail to start, with vLLM's log lines) and serve until SIGTERM."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--served-model-name", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    parser.add_argument("--startup-delay", type=float, default=0.5)
    args, _ = parser.parse_known_args(argv)
    print(f"INFO starting server for {args.model}", flush=True)
    time.sleep(args.startup_delay)
    if args.gpu_memory_utilization > MAX_MEMORY_FRACTION - 1e-9:
        print("Traceback (most recent call last):", flush=True)
        print(
            "ValueError: Available memory (7.0 GiB) is less than desired CPU memory utilization "
            f"({args.gpu_memory_utilization})",
            flush=True,
        )
        print("RuntimeError: Engine core initialization failed. See root cause above.")
        return 1
    fake_openai_server.MODEL_NAME = args.served_model_name
    serve_until_signal(FakeOpenAIServer(host=args.host, port=args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
