"""Start and exit costs of the command line, measured from outside, each command a fresh
process (the installed ``tmas`` script), medians of the repeats:

* the commands that only look (``--help``, ``runs``, ``graphs``, ``graph tmas``, ``show RUN``,
  ``show --help``, ``memory ls``), on a run database holding the runs below; goal 0.3 s each;
* ``tmas solve -n 1 -m 1 -t 1`` against a server that answers at once, launch to exit; goal
  1.0 s;
* ``tmas solve -n 8 -m 8 -t 3`` against a loopback scripted server answering each request after
  a fixed latency: launch to the first request the server sees, first request to the last
  answer against the ideal (4 stages x iterations x latency), last answer to the process's
  exit, and launch to exit; goals: the span at most 1.05 x the ideal, launch to exit at most
  7.8 s at 0.5 s a call.

    python benchmarks/startup.py [--latency 0.5] [--repeats 3] [--toy]
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


def wall(args: list[str]) -> float:
    """Seconds from launch to exit of ``tmas args`` (which must succeed)."""
    start = time.time()
    subprocess.run([*tmas_command(), *args], capture_output=True, check=True)
    return time.time() - start


def looking_commands(db: Path) -> dict[str, list[str]]:
    """The commands that only look, on ``db`` (which holds at least one run)."""
    listed = subprocess.run([*tmas_command(), "runs", "--db", str(db)], capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    run_id = next(word for word in listed.split() if len(word) == 12 and word.isalnum())
    on_db = ["--db", str(db)]
    return {
        "tmas --help": ["--help"], "tmas runs": ["runs", *on_db], "tmas graphs": ["graphs"],
        "tmas graph tmas": ["graph", "tmas"], "tmas show RUN": ["show", run_id, *on_db],
        "tmas show --help": ["show", "--help"], "tmas memory ls": ["memory", "ls", *on_db],
    }  # fmt: skip


def solve_times(
    latency: float, iterations: int, db: Path, width: int = 8
) -> tuple[float, float, float]:
    """(launch to first request, first request to last answer, last answer to exit) of
    ``tmas solve`` at N=M=``width``, saved in ``db``."""
    with FakeOpenAIServer(latency_s=latency) as server:
        args = [
            *tmas_command(), "solve", "What is 9 + 9?", "--base-url", server.base_url,
            "--model", "scripted", "--db", str(db), "--quiet", "--memory", "bench",
            "-n", str(width), "-m", str(width), "-t", str(iterations),
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
    parser.add_argument(
        "--toy",
        action="store_true",
        help="toy size, for CI: solve -n 2 -m 2 -t 1, latency 0.05 s, one repeat",
    )
    args = parser.parse_args()
    width = 2 if args.toy else 8
    if args.toy:
        args.latency, args.iterations, args.repeats = 0.05, 1, 1
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder, "runs.sqlite")
        runs = [solve_times(args.latency, args.iterations, db, width) for _ in range(args.repeats)]
        with FakeOpenAIServer() as instant:
            small = ["solve", "What is 9 + 9?", "--base-url", instant.base_url, "--model",
                     "scripted", "--db", str(db), "--quiet", "-n", "1", "-m", "1",
                     "-t", "1"]  # fmt: skip
            smallest = statistics.median(wall(small) for _ in range(args.repeats))
        looks = {name: statistics.median(wall(command) for _ in range(args.repeats))
                 for name, command in looking_commands(db).items()}  # fmt: skip
    print(f"medians of {args.repeats}")
    for name, seconds in looks.items():
        print(f"{name:<31}{seconds:.2f} s   (goal <= 0.3)")
    print(f"{'solve -n 1 -m 1 -t 1, instant':<31}{smallest:.2f} s   (goal <= 1.0)")
    to_first, span, to_exit = (statistics.median(r[i] for r in runs) for i in range(3))
    ideal = STAGES * args.iterations * args.latency
    print(f"solve -n {width} -m {width} -t {args.iterations}, latency {args.latency} s:")
    print(f"launch to first request     {to_first:.2f} s")
    ratio = span / ideal
    print(f"first request to last answer {span:.2f} s   ideal {ideal:.2f} s, ratio {ratio:.3f}")
    print(f"last answer to exit         {to_exit:.2f} s")
    total = statistics.median(sum(r) for r in runs)
    print(f"launch to exit              {total:.2f} s   (goal <= 7.8 at 8/8/3 and 0.5 s)")


if __name__ == "__main__":
    main()
