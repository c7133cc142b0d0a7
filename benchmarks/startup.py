"""Start and exit costs of the command line, measured from outside.

Launches ``tmas --help`` and ``tmas solve -n 8 -m 8 -t 3`` (against a loopback scripted server
in this process, answering each request after a fixed latency) as fresh processes, and prints
medians of: ``--help`` wall time; launch to the first request the server sees; first request
to the last answer against the ideal (4 stages x iterations x latency); last answer to the
process's exit. Goals: ``--help`` and launch-to-first-request at most 0.8 s; the call span at
most 1.05 x the ideal.

    python benchmarks/startup.py [--latency 0.5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tmas.testing.fake_openai_server import FakeOpenAIServer

STAGES = 4  # solve, verify, summarize, reflect


def tmas_command() -> list[str]:
    """The installed ``tmas`` script (what a user runs), else the module."""
    found = shutil.which("tmas", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "tmas.cli"]


def help_wall() -> float:
    start = time.time()
    subprocess.run([*tmas_command(), "--help"], capture_output=True, check=True)
    return time.time() - start


def solve_times(latency: float, iterations: int, folder: Path) -> tuple[float, float, float]:
    """(launch to first request, first request to last answer, last answer to exit)."""
    with FakeOpenAIServer(latency_s=latency) as server:
        args = [
            *tmas_command(), "solve", "What is 9 + 9?", "--base-url", server.base_url,
            "--model", "scripted", "--db", str(folder / f"{time.time_ns()}.sqlite"), "--quiet",
            "-n", "8", "-m", "8", "-t", str(iterations),
        ]  # fmt: skip
        launched = time.time()
        subprocess.run(args, capture_output=True, check=True)
        exited = time.time()
        timings = server.timings
    first = min(t["arrived"] for t in timings)
    last = max(t["answered"] for t in timings)
    return first - launched, last - first, exited - last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    helps = [help_wall() for _ in range(args.repeats)]
    with tempfile.TemporaryDirectory() as folder:
        runs = [
            solve_times(args.latency, args.iterations, Path(folder)) for _ in range(args.repeats)
        ]
    to_first, span, to_exit = (statistics.median(r[i] for r in runs) for i in range(3))
    ideal = STAGES * args.iterations * args.latency
    print(
        f"medians of {args.repeats}; solve -n 8 -m 8 -t {args.iterations}, latency {args.latency} s"
    )
    print(f"tmas --help                 {statistics.median(helps):.2f} s   (goal <= 0.8)")
    print(f"launch to first request     {to_first:.2f} s   (goal <= 0.8)")
    ratio = span / ideal
    print(f"first request to last answer {span:.2f} s   ideal {ideal:.2f} s, ratio {ratio:.3f}")
    print(f"last answer to exit         {to_exit:.2f} s")


if __name__ == "__main__":
    main()
