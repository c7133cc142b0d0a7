"""``tmas eval --graph pacore`` against a bare asyncio loop doing PaCoRe's rounds, side by side,
both as whole processes against the same loopback server that answers each request after a
fixed latency.

The workload (the defaults): 8 problems at once, widths [16, 1] (16 parallel samples per
problem, then one sample that reads them), 2 s a call: the ideal is 2 rounds x 2 s = 4 s. The
bare loop posts plain JSON through one aiohttp session, every problem's round at once, as
PaCoRe's own inference loop does; ``tmas eval`` runs the bundled ``pacore`` topology with its
run database, checkpoints and progress. Both make the same number of calls (checked); the
bare side's process imports nothing of the package::

    python benchmarks/pacore_loop.py [--latency 2] [--problems 8] [--width 16] [--repeats 3]
    python benchmarks/pacore_loop.py --toy
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROBLEM = "Problem {i}: what is {i} + 9?"


def bare_loop(base_url: str, problems: int, width: int) -> None:
    """PaCoRe's rounds as a plain asyncio loop: every problem's samples at once, then each
    problem's one aggregating sample over its samples' answers."""
    import aiohttp

    url = f"{base_url}/chat/completions"

    async def ask(session: aiohttp.ClientSession, text: str) -> str:
        body = {"model": "scripted", "messages": [{"role": "user", "content": text}],
                "max_tokens": 64, "seed": 0}  # fmt: skip
        async with session.post(url, json=body, headers={"X-TMAS-Role": "solver"}) as reply:
            return (await reply.json())["choices"][0]["message"]["content"]

    async def one(session: aiohttp.ClientSession, i: int) -> str:
        problem = PROBLEM.format(i=i)
        samples = await asyncio.gather(*(ask(session, problem) for _ in range(width)))
        references = "\n".join(sample[-400:] for sample in samples)
        return await ask(session, f"{problem}\nReference solutions:\n{references}")

    async def everything() -> None:
        connector = aiohttp.TCPConnector(limit=problems * width)
        async with aiohttp.ClientSession(connector=connector) as session:
            await asyncio.gather(*(one(session, i) for i in range(problems)))

    asyncio.run(everything())


def tmas_command() -> list[str]:
    """The installed ``tmas`` script (what a user runs), else the module."""
    found = shutil.which("tmas", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "tmas.cli"]


def timed_process(args: list[str], server: Any) -> tuple[float, int]:
    """Seconds from launch to exit of ``args``, and the requests the server served meanwhile."""
    before = server.request_count
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:3])} failed:\n{done.stderr[-2000:]}")
    return elapsed, server.request_count - before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per call")
    parser.add_argument("--problems", type=int, default=8)
    parser.add_argument("--width", type=int, default=16, help="samples in the first round")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--toy", action="store_true", help="2 problems, width 2, 0.05 s (CI)")
    parser.add_argument("--bare-loop", metavar="BASE_URL", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.toy:
        args.latency, args.problems, args.width, args.repeats = 0.05, 2, 2, 1
    if args.bare_loop:  # the bare side, run as its own process
        bare_loop(args.bare_loop, args.problems, args.width)
        return 0
    if min(args.problems, args.width, args.repeats) < 1 or args.latency < 0:
        parser.error("--problems, --width and --repeats must be at least 1, --latency >= 0")
    from tmas.testing.fake_openai_server import FakeOpenAIServer  # not in the bare side

    calls = args.problems * (args.width + 1)
    times: dict[str, list[float]] = {"tmas eval": [], "bare loop": []}
    with (
        tempfile.TemporaryDirectory(prefix="tmas-pacore-") as tmp,
        FakeOpenAIServer(latency_s=args.latency) as server,
    ):
        data = Path(tmp, "problems.jsonl")
        rows = [{"id": f"p{i}", "problem": PROBLEM.format(i=i), "answer": str(i + 9)}
                for i in range(args.problems)]  # fmt: skip
        data.write_text("".join(json.dumps(row) + "\n" for row in rows))
        for repeat in range(args.repeats):
            ours = [*tmas_command(), "eval", "--graph", "pacore", "--data", str(data),
                    "-n", str(args.width), "-t", "2", "--concurrency", str(args.problems),
                    "--base-url", server.base_url, "--model", "scripted",
                    "--db", str(Path(tmp, f"runs-{repeat}.sqlite")),
                    "--out", str(Path(tmp, f"eval-{repeat}"))]  # fmt: skip
            bare = [sys.executable, __file__, "--bare-loop", server.base_url,
                    "--problems", str(args.problems), "--width", str(args.width)]  # fmt: skip
            sides = [("tmas eval", ours), ("bare loop", bare)]
            for name, command in sides if repeat % 2 == 0 else sides[::-1]:
                elapsed, served = timed_process(command, server)
                assert served == calls, f"{name} made {served} calls, not {calls}"
                times[name].append(elapsed)
    ideal = 2 * args.latency
    print(f"{args.problems} problems at once, widths [{args.width}, 1], {args.latency} s a call, "
          f"{calls} calls a side; ideal {ideal:.2f} s; median of {args.repeats}, "
          "whole process")  # fmt: skip
    median = {name: statistics.median(found) for name, found in times.items()}
    for name, seconds in median.items():
        print(f"{name:<10} {seconds:6.2f} s")
    print(f"tmas eval / bare loop = {median['tmas eval'] / median['bare loop']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
