"""Do the fan-outs really run in parallel? One TMAS iteration (N=16, M=4) against a loopback
OpenAI-compatible server that answers every request after a fixed latency.

The ideal wall time is (LLM stages) x latency: solve, verify, summarize and the reflection
stage (experience and guideline together) each take one latency when every call of the
stage runs at once. Side by side, a plain thread pool and a plain asyncio loop (the model's
async client, one event loop) make the same number of calls per stage through the same chat
model: their wall times are what the HTTP client and server cost by themselves, with no
graph. The graph runs both ways: ``invoke`` (model calls in threads) and ``ainvoke`` (async
model calls on one event loop, as ``tmas solve`` drives a run). Prints all, the ideal and the
ratios (goal for the graph: at most 1.15 x the ideal, 1.05 x plain asyncio).

The server runs in its own process (``--in-process-server`` puts it in this one, where its
request handling competes with the client for the interpreter lock).

    python benchmarks/concurrency.py [--latency 0.1] [--max-concurrency 64] [--toy]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from tmas import build_tmas_graph
from tmas.config import TMASConfig
from tmas.lifecycle.manager import thread_config
from tmas.llm.openai_compat import make_openai_chat_model
from tmas.llm.router import ModelRouter
from tmas.testing.fake_openai_server import FakeOpenAIServer

GOAL = 1.15


@contextmanager
def serving(latency: float, in_process: bool) -> Iterator[str]:
    """The base URL of a scripted server answering after ``latency`` seconds."""
    if in_process:
        with FakeOpenAIServer(latency_s=latency) as server:
            yield server.base_url
        return
    command = [sys.executable, "-m", "tmas.testing.fake_openai_main", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--latency", str(latency)], stdout=subprocess.PIPE, text=True
    )
    try:
        yield process.stdout.readline().strip()  # type: ignore[union-attr]
    finally:
        process.terminate()
        process.wait(timeout=30)


def stage_sizes(config: TMASConfig) -> list[int]:
    """Calls per LLM stage of one TMAS iteration: solve, verify, summarize, reflect."""
    n, m = config.n_candidates, config.n_verifications
    return [n, n * m, n, 2 * n]


def plain_stages(model: BaseChatModel, sizes: list[int], workers: int) -> Callable[[], None]:
    """One run of the same stages as plain thread-pool fan-outs (a stage waits for the last)."""
    prompt = [HumanMessage("You are the solver agent. What is 9 + 9?")]

    def run() -> None:
        with ThreadPoolExecutor(workers) as pool:
            for size in sizes:
                list(pool.map(lambda _: model.invoke(prompt), range(size)))

    return run


def plain_async_stages(model: BaseChatModel, sizes: list[int], limit: int) -> Callable[[], None]:
    """The same stages as asyncio fan-outs over the model's async client (one event loop, one
    HTTP client), at most ``limit`` calls in flight."""
    prompt = [HumanMessage("You are the solver agent. What is 9 + 9?")]

    async def stages() -> None:
        bound = asyncio.Semaphore(limit)

        async def call() -> None:
            async with bound:
                await model.ainvoke(prompt)

        for size in sizes:
            await asyncio.gather(*(call() for _ in range(size)))

    loop = asyncio.new_event_loop()  # kept across runs, so its HTTP connections are reused
    return lambda: loop.run_until_complete(stages())


def median_wall(run: Callable[[], object], repeats: int) -> float:
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--max-concurrency", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--in-process-server", action="store_true")
    parser.add_argument(
        "--toy", action="store_true", help="toy size, for CI: N=2 M=1, latency 0.01 s, one repeat"
    )
    args = parser.parse_args()
    n, m = (2, 1) if args.toy else (16, 4)
    if args.toy:
        args.latency, args.repeats = 0.01, 1
    config = TMASConfig(n_candidates=n, n_verifications=m, max_iterations=1, max_retries=0)
    sizes = stage_sizes(config)
    with serving(args.latency, args.in_process_server) as base_url:
        model = make_openai_chat_model(
            base_url=base_url, model="scripted", max_tokens=64, temperature=0.7, max_retries=0
        )
        router = ModelRouter(model, max_parallel_calls=args.max_concurrency)
        graph = build_tmas_graph(config, llm=router)
        runs = iter(range(1_000_000))

        def graph_run() -> None:
            graph.invoke({"problem": "What is 9 + 9?"}, thread_config(f"r{next(runs)}", config))

        loop = asyncio.new_event_loop()  # kept across runs, as for the plain asyncio side

        def graph_async_run() -> None:
            thread = thread_config(f"r{next(runs)}", config)
            loop.run_until_complete(graph.ainvoke({"problem": "What is 9 + 9?"}, thread))

        plain_run = plain_stages(model, sizes, args.max_concurrency)
        async_run = plain_async_stages(model, sizes, args.max_concurrency)
        graph_run(), graph_async_run(), plain_run(), async_run()  # warm-up: connections
        graph_walls, graph_async_walls, plain_walls, async_walls = [], [], [], []
        for _ in range(args.repeats):  # interleaved, so all see the same machine
            graph_walls.append(median_wall(graph_run, 1))
            graph_async_walls.append(median_wall(graph_async_run, 1))
            plain_walls.append(median_wall(plain_run, 1))
            async_walls.append(median_wall(async_run, 1))
        graph_wall, plain_wall = statistics.median(graph_walls), statistics.median(plain_walls)
        async_wall = statistics.median(async_walls)
        graph_async_wall = statistics.median(graph_async_walls)
    ideal = len(sizes) * args.latency
    where = "in this process" if args.in_process_server else "in its own process"
    print(
        f"N={config.n_candidates} M={config.n_verifications}: {sum(sizes)} calls in "
        f"{len(sizes)} stages {sizes}, latency {args.latency * 1000:.0f} ms, max_concurrency "
        f"{args.max_concurrency}, server {where}; medians of {args.repeats}"
    )
    verdict = "ok" if graph_async_wall / ideal <= GOAL else "above goal"
    print(f"ideal (stages x latency)   {ideal:.3f} s")
    print(f"TMAS graph, invoke         {graph_wall:.3f} s  ratio {graph_wall / ideal:.2f}")
    print(
        f"TMAS graph, ainvoke        {graph_async_wall:.3f} s  ratio "
        f"{graph_async_wall / ideal:.2f} (goal at most {GOAL}: {verdict})"
    )
    print(f"plain thread-pool stages   {plain_wall:.3f} s  ratio {plain_wall / ideal:.2f}")
    print(f"plain asyncio stages       {async_wall:.3f} s  ratio {async_wall / ideal:.2f}")
    print(f"graph invoke / plain threads     {graph_wall / plain_wall:.2f}")
    print(
        f"graph ainvoke / plain asyncio    {graph_async_wall / async_wall:.2f}  (goal at most 1.05)"
    )


if __name__ == "__main__":
    main()
