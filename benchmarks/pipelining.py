"""How much does an iteration pay for its barriers? One TMAS iteration (N=8, M=8) against a
loopback scripted server whose latencies are drawn from a seeded log-normal (median and sigma
set here; a request's latency depends on the request alone, so every topology meets the same
latencies).

From the latencies the server drew, two ideals of the iteration's model-call span:

- barrier ideal: the sum over the four stages (solve, verify, summarize, reflect) of each
  stage's slowest call (what a schedule that waits for every sibling cannot beat);
- pipelined ideal: the slowest candidate chain (solve_i + slowest of its M checks + its
  summary + the slower of its two reflections), the least any schedule can take.

Each topology runs twice: driven with ``invoke`` (each model call in a worker thread) and with
``ainvoke`` (async model calls on one event loop, as ``tmas solve`` drives a run).

Prints, per topology, driver and sigma, the span (first request to last answer), both ideals and the
ratios. Goal for a pipelined topology: span at most 1.05 x the pipelined ideal at sigma=1.0.

    python benchmarks/pipelining.py [--median 0.2] [--sigmas 0,0.5,1.0] [--graphs tmas]
        [--drivers sync,async] [--toy]
"""

from __future__ import annotations

import argparse
import itertools
from collections import defaultdict
from typing import Any

from tmas import build_graph, load_topology
from tmas.config import TMASConfig
from tmas.lifecycle.event_loop import run_to_end
from tmas.lifecycle.manager import thread_config
from tmas.llm.openai_compat import make_openai_chat_model
from tmas.llm.router import ModelRouter
from tmas.seeding import derive_seed
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.latency import LogNormalLatency

GOAL = 1.05
STAGE_OF_LABEL = {
    "solve": "solve",
    "verify": "verify",
    "summary": "summarize",
    "experience": "reflect",
    "guideline": "reflect",
}


def task_of_seed(config: TMASConfig, iteration: int = 1) -> dict[int, tuple[str, int]]:
    """Each call's seed -> (stage, candidate index), as the agents derive their seeds."""
    found: dict[int, tuple[str, int]] = {}
    for i in range(config.n_candidates):
        for label in ("solve", "summary", "experience", "guideline"):
            found[derive_seed(config.seed, label, iteration, i)] = (STAGE_OF_LABEL[label], i)
        for j in range(config.n_verifications):
            found[derive_seed(config.seed, "verify", iteration, i, j)] = ("verify", i)
    return found


def ideals(timings: list[dict[str, Any]], config: TMASConfig) -> tuple[float, float]:
    """(barrier ideal, pipelined ideal) of the calls the server answered."""
    where = task_of_seed(config)
    slowest: dict[tuple[str, int], float] = defaultdict(float)
    for timing in timings:
        stage, index = where[int(timing["seed"])]
        slowest[stage, index] = max(slowest[stage, index], timing["latency_s"])
    stages = ("solve", "verify", "summarize", "reflect")
    candidates = range(config.n_candidates)
    barrier = sum(max(slowest[s, i] for i in candidates) for s in stages)
    pipelined = max(sum(slowest[s, i] for s in stages) for i in candidates)
    return barrier, pipelined


def one_iteration(
    graph_name: str, latency: LogNormalLatency, config: TMASConfig, driver: str
) -> tuple:
    """(span, barrier ideal, pipelined ideal) of one iteration of ``graph_name``."""
    with FakeOpenAIServer(latency_s=latency) as server:
        model = make_openai_chat_model(
            base_url=server.base_url,
            model="scripted",
            max_tokens=64,
            temperature=0.7,
            max_retries=0,
        )
        width = config.n_candidates * config.n_verifications
        router = ModelRouter(model, max_parallel_calls=width)
        graph = build_graph(load_topology(graph_name), llm=router, config=config)
        problem, thread = {"problem": "What is 9 + 9?"}, thread_config("bench", config)
        if driver == "async":
            run_to_end(lambda: graph.ainvoke(problem, thread))
        else:
            graph.invoke(problem, thread)
        timings = server.timings
    span = max(t["answered"] for t in timings) - min(t["arrived"] for t in timings)
    return (span, *ideals(timings, config))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--median", type=float, default=0.2, help="median latency, seconds")
    parser.add_argument("--sigmas", default="0,0.5,1.0")
    parser.add_argument("--graphs", default="tmas", help="comma-separated topologies")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--drivers", default="sync,async", help="sync (invoke), async (ainvoke)")
    parser.add_argument(
        "--toy",
        action="store_true",
        help="toy size, for CI: N=2 M=2, median latency 0.01 s, sigma 1.0 only (both drivers)",
    )
    args = parser.parse_args()
    width = 2 if args.toy else 8
    if args.toy:
        args.median, args.sigmas = 0.01, "1.0"
    config = TMASConfig(n_candidates=width, n_verifications=width, max_iterations=1, max_retries=0)
    print(
        f"N={config.n_candidates} M={config.n_verifications}, one iteration, log-normal "
        f"latency median {args.median * 1000:.0f} ms, latency seed {args.seed}"
    )
    print(f"{'topology':<18}{'driver':>7}{'sigma':>6}{'span s':>9}{'barrier':>9}{'pipelined':>10}"
          f"{'span/barrier':>14}{'span/pipelined':>16}{'barrier/pipelined':>19}")  # fmt: skip
    for sigma in (float(s) for s in args.sigmas.split(",")):
        latency = LogNormalLatency(args.median, sigma, args.seed)
        for name, driver in itertools.product(args.graphs.split(","), args.drivers.split(",")):
            span, barrier, pipelined = one_iteration(name, latency, config, driver)
            print(
                f"{name:<18}{driver:>7}{sigma:>6.1f}{span:>9.3f}{barrier:>9.3f}{pipelined:>10.3f}"
                f"{span / barrier:>14.2f}{span / pipelined:>16.2f}{barrier / pipelined:>19.2f}"
            )
    print(f"goal for a pipelined topology: span/pipelined <= {GOAL} at sigma=1.0")


if __name__ == "__main__":
    main()
