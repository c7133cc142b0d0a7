"""Embedded llama.cpp settings measured on one TMAS iteration (N=4, M=2) side by side.

Variants: llama.cpp's own thread default (half the cores) and all cores, both with calls
serialised by a plain lock, then all cores with the prefix-affinity order ChatLlamaCpp uses
(the waiting call sharing the most prompt prefix with the last one goes next, so llama.cpp
reuses its KV cache). Each variant runs the same iteration with the
same seeds; prints wall time, tokens and the ratio to the first.

    python benchmarks/local_model_settings.py [--model qwen|smollm2|PATH] [--iterations 1]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tmas import build_tmas_graph
from tmas.config import TMASConfig
from tmas.llm.llamacpp import ChatLlamaCpp
from tmas.llm.model_files import resolve_local_model

PROBLEM = (
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips "
    "in May. How many clips did Natalia sell altogether in April and May?"
)


class PlainLock:
    """The plain alternative to PrefixAffinityLock: whoever gets the lock first goes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        with self._lock:
            yield


def run_variant(path: str, iterations: int, n_threads: int, affinity: bool) -> tuple[float, dict]:
    config = TMASConfig(max_iterations=iterations)
    model = ChatLlamaCpp(model_path=path, n_ctx=4096, n_threads=n_threads, seed=config.seed)
    if not affinity:
        model._gate = PlainLock()
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
        ("half the cores, plain lock", max(multiprocessing.cpu_count() // 2, 1), False),
        ("all cores, plain lock", cores, False),
        ("all cores, prefix affinity", cores, True),
    ]
    print(f"model={os.path.basename(path)} cores={cores} iterations={args.iterations}")
    baseline = None
    for name, threads, affinity in variants:
        seconds, state = run_variant(path, args.iterations, threads, affinity)
        baseline = baseline or seconds
        usage = state["usage"]
        tokens_in = sum(u["input_tokens"] for u in usage.values())
        tokens_out = sum(u["output_tokens"] for u in usage.values())
        print(
            f"{name:<32} threads={threads}  {seconds:7.1f} s  "
            f"in={tokens_in} out={tokens_out}  ratio={seconds / baseline:.2f}  "
            f"answer={state['final_answer']}"
        )


if __name__ == "__main__":
    main()
