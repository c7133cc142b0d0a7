"""Embedded llama.cpp settings measured on one TMAS iteration (N=4, M=2) side by side.

Variants: llama.cpp's own thread default (half the cores), all cores, all cores plus an
in-memory prompt cache (KV states reused across calls that share a prefix). Each variant runs
the same iteration with the same seeds; prints wall time, tokens and the ratio to the first.

    python benchmarks/local_model_settings.py [--model qwen|smollm2|PATH] [--iterations 1]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time

from tmas.config import TMASConfig
from tmas.graphs import build_tmas_graph
from tmas.llm.llamacpp import ChatLlamaCpp
from tmas.llm.model_files import resolve_local_model

PROBLEM = (
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips "
    "in May. How many clips did Natalia sell altogether in April and May?"
)


def run_variant(path: str, iterations: int, n_threads: int, cache_mb: int) -> tuple[float, dict]:
    config = TMASConfig(max_iterations=iterations)
    model = ChatLlamaCpp(
        model_path=path,
        n_ctx=4096,
        n_threads=n_threads,
        prompt_cache_mb=cache_mb,
        seed=config.seed,
    )
    graph = build_tmas_graph(config, llm=model)
    model.invoke("hi", max_tokens=1)  # load the weights outside the timed part
    start = time.perf_counter()
    state = graph.invoke({"problem": PROBLEM, "gold_answer": "72"}, {"max_concurrency": 32})
    return time.perf_counter() - start, state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default=None)
    parser.add_argument("--iterations", type=int, default=1)
    args = parser.parse_args()
    path = str(resolve_local_model(args.model))
    cores = os.cpu_count() or 1
    variants = [
        ("half the cores (llama.cpp default)", max(multiprocessing.cpu_count() // 2, 1), 0),
        ("all cores", cores, 0),
        ("all cores + prompt cache", cores, 1024),
    ]
    print(f"model={os.path.basename(path)} cores={cores} iterations={args.iterations}")
    baseline = None
    for name, threads, cache_mb in variants:
        seconds, state = run_variant(path, args.iterations, threads, cache_mb)
        baseline = baseline or seconds
        usage = state["usage"]
        tokens_in = sum(u["input_tokens"] for u in usage.values())
        tokens_out = sum(u["output_tokens"] for u in usage.values())
        print(
            f"{name:<36} threads={threads} cache={cache_mb}MB  {seconds:7.1f} s  "
            f"in={tokens_in} out={tokens_out}  ratio={seconds / baseline:.2f}  "
            f"answer={state['final_answer']}"
        )


if __name__ == "__main__":
    main()
