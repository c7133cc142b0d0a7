"""Do the fan-outs really run in parallel? One TMAS iteration (N=16, M=4) against a loopback
OpenAI-compatible server that answers every request after a fixed latency.

The ideal wall time is (LLM stages) x latency: solve, verify, summarize and the reflection
stage (experience and guideline together) each take one latency when every call of the
stage runs at once. Prints the measured wall time, the ideal, their ratio (goal: at most
1.15) and the peak number of requests the server saw in flight.

    python benchmarks/concurrency.py [--latency 0.1] [--max-concurrency 64]
"""

from __future__ import annotations

import argparse
import time

from tmas.config import TMASConfig
from tmas.graphs import build_tmas_graph
from tmas.llm.openai_compat import make_openai_chat_model
from tmas.llm.router import ModelRouter
from tmas.runner import thread_config
from tmas.testing.fake_openai_server import FakeOpenAIServer

LLM_STAGES = 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--max-concurrency", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    config = TMASConfig(n_candidates=16, n_verifications=4, max_iterations=1, max_retries=0)
    with FakeOpenAIServer(latency_s=args.latency) as server:
        model = make_openai_chat_model(
            base_url=server.base_url,
            model="scripted",
            max_tokens=64,
            temperature=0.7,
            max_retries=0,
        )
        router = ModelRouter.for_config(model, None, config, args.max_concurrency)
        graph = build_tmas_graph(config, llm=router)
        graph.invoke({"problem": "What is 9 + 9?"}, thread_config("warm-up", config))
        walls = []
        for repeat in range(args.repeats):
            start = time.perf_counter()
            graph.invoke({"problem": "What is 9 + 9?"}, thread_config(f"r{repeat}", config))
            walls.append(time.perf_counter() - start)
        peak = server.max_in_flight
    wall = sorted(walls)[len(walls) // 2]
    ideal = LLM_STAGES * args.latency
    calls = config.calls_per_iteration()
    print(
        f"N={config.n_candidates} M={config.n_verifications}: {calls} calls in {LLM_STAGES} "
        f"stages, latency {args.latency * 1000:.0f} ms, max_concurrency {args.max_concurrency}"
    )
    print(
        f"wall {wall:.3f} s (median of {args.repeats}) vs ideal {ideal:.3f} s: "
        f"ratio {wall / ideal:.2f} (goal at most 1.15); peak in flight {peak}"
    )


if __name__ == "__main__":
    main()
