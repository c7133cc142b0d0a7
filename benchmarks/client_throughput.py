"""Calls per second one process sustains, and the CPU it spends per call, against a loopback
server that answers at once (``tmas.testing.instant_server``, in its own process).

Every side makes the same calls with the same fan-out widths: one TMAS iteration at N=32, M=32
(32 solver calls, then 1,024 verifications in flight at once, then 32 summaries and 64
reflections; 1,152 calls):

* ``tmas``: the run as ``tmas solve`` makes it (run manager, LangGraph graph, SQLite
  checkpoints, the package's own client);
* ``tmas+ChatOpenAI``: the same run with LangChain's ChatOpenAI as the model (the OpenAI SDK on
  httpx, what the built-in backends used before);
* ``aiohttp``: a bare asyncio loop posting the same number of requests, stage by stage, through
  one aiohttp session (no graph, no checkpoints);
* ``httpx``: the same bare loop through one ``httpx.AsyncClient``.

Sides run interleaved; the median of the repeats is printed, with each side's ratio to the
bare aiohttp loop. CPU is this process's user + system time (the server's is not counted)::

    python benchmarks/client_throughput.py [--n 32 --m 32] [--repeats 3] [--toy]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp
import httpx

from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.manager import RunManager
from tmas.llm.backend import BackendSpec
from tmas.llm.openai_compat import make_openai_chat_model
from tmas.storage.sqlite import connect

BODY = {"model": "instant", "messages": [{"role": "user", "content": "What is 9 + 9?"}],
        "max_tokens": 16}  # fmt: skip
Measure = tuple[float, float]  # calls per second, CPU ms per call


def stage_widths(config: TMASConfig) -> list[int]:
    """The calls of one TMAS iteration, stage by stage (solve, verify, summarize, reflect)."""
    n, m = config.n_candidates, config.n_verifications
    return [n, n * m, n, 2 * n]


def timed(calls: int, work: Callable[[], None]) -> Measure:
    """Run ``work`` once; its calls per second and this process's CPU ms per call."""
    cpu, wall = time.process_time(), time.perf_counter()
    work()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return calls / wall, cpu * 1000 / calls


def bare_aiohttp(url: str, widths: list[int]) -> None:
    async def stages() -> None:
        connector = aiohttp.TCPConnector(limit=max(widths))
        async with aiohttp.ClientSession(connector=connector) as session:

            async def one() -> None:
                async with session.post(url, json=BODY) as reply:
                    await reply.read()

            for width in widths:
                await asyncio.gather(*(one() for _ in range(width)))

    asyncio.run(stages())


def bare_httpx(url: str, widths: list[int]) -> None:
    async def stages() -> None:
        limits = httpx.Limits(max_connections=max(widths), max_keepalive_connections=max(widths))
        async with httpx.AsyncClient(limits=limits) as client:
            for width in widths:
                await asyncio.gather(*(client.post(url, json=BODY) for _ in range(width)))

    asyncio.run(stages())


def tmas_run(base_url: str, config: TMASConfig, folder: Path, chat_openai: bool) -> None:
    """One TMAS iteration through the run manager, checkpointed to a fresh SQLite file."""
    backend = BackendSpec(kind="openai", base_url=base_url, model="instant")
    plan = plan_run(load_bundled("tmas"), config, backend)
    router_factory = None
    if chat_openai:
        from tmas.api import models_router

        model = make_openai_chat_model(base_url=base_url, model="instant", max_tokens=16,
                                       temperature=0.0, timeout=60)  # fmt: skip
        router_factory = lambda plan: models_router(plan, model)  # noqa: E731
    conn = connect(folder / f"runs-{time.perf_counter_ns()}.sqlite")
    try:
        manager = RunManager(conn, router_factory=router_factory)
        outcome = manager.start(
            "bench", problem="What is 9 + 9?", gold_answer="18", plan=plan,
            show_progress=False, max_concurrency=max(stage_widths(config)),
        )  # fmt: skip
        calls = sum(u["calls"] for u in outcome.state["usage"].values())
        assert calls == config.calls_per_iteration(), f"made {calls} calls"
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=32, help="candidates (N)")
    parser.add_argument("--m", type=int, default=32, help="verifications per candidate (M)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--toy", action="store_true", help="N=2, M=2, one repeat (CI)")
    args = parser.parse_args(argv)
    if args.toy:
        args.n, args.m, args.repeats = 2, 2, 1
    if min(args.n, args.m, args.repeats) < 1:
        parser.error("--n, --m and --repeats must be at least 1")
    config = TMASConfig(n_candidates=args.n, n_verifications=args.m, max_iterations=1)
    widths = stage_widths(config)
    calls = sum(widths)
    server = subprocess.Popen([sys.executable, "-m", "tmas.testing.instant_server"],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        base_url = (server.stdout.readline() if server.stdout else "").strip()
        if not base_url:
            raise SystemExit("the instant server did not start")
        url = f"{base_url}/chat/completions"
        results: dict[str, list[Measure]] = {}
        with tempfile.TemporaryDirectory(prefix="tmas-throughput-") as tmp:
            sides: dict[str, Callable[[], None]] = {
                "tmas": lambda: tmas_run(base_url, config, Path(tmp), chat_openai=False),
                "tmas+ChatOpenAI": lambda: tmas_run(base_url, config, Path(tmp), chat_openai=True),
                "aiohttp": lambda: bare_aiohttp(url, widths),
                "httpx": lambda: bare_httpx(url, widths),
            }
            for repeat in range(args.repeats):
                names = list(sides)
                for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
                    results.setdefault(name, []).append(timed(calls, sides[name]))
    finally:
        server.kill()
        server.wait()
    python = sys.version.split()[0]
    print(f"{calls} calls a run (stage widths {widths}), {max(widths)} in flight at most; "
          f"median of {args.repeats}; {os.cpu_count()} CPUs, Python {python}")  # fmt: skip
    base = statistics.median(r[0] for r in results["aiohttp"])
    print(f"{'side':<17}{'calls/s':>9}{'CPU ms/call':>13}{'x aiohttp calls/s':>19}")
    for name, found in results.items():
        rate = statistics.median(r[0] for r in found)
        cpu = statistics.median(r[1] for r in found)
        print(f"{name:<17}{rate:9.0f}{cpu:13.2f}{rate / base:19.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
