"""TMAS on the embedded model: the one-at-a-time path against the batching engine, side by side.

Each variant runs the same TMAS iterations (same problem, config and seed) on a freshly
loaded model, weights loaded outside the timing; prints wall time, calls, tokens, the
engine's prefill and decode tokens/s and prefix-cache hit rate, and the ratio of the serial
path's wall time to each variant's. The engine's profile splits the wall time into steps
that held prompt tokens, decode-only steps, the engine's own Python work, and idle time
(no call in flight: the graph between stages, or a stage waiting on nothing).

    python benchmarks/embedded_backend.py [--model qwen|smollm2|PATH] [-n 4] [-m 2] [-t 1]
        [--max-tokens 512] [--variants serial,batched,exact] [--threads N] [--toy]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from tmas import build_tmas_graph
from tmas.config import TMASConfig
from tmas.llm.engine import close_engines
from tmas.llm.llamacpp import ChatLlamaCpp
from tmas.llm.model_files import resolve_local_model

PROBLEM = (
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips "
    "in May. How many clips did Natalia sell altogether in April and May?"
)

VARIANTS: dict[str, dict[str, Any]] = {
    "serial": {"engine": "serial", "flash_attn": True},  # as the embedded path was before
    "batched": {"engine": "batched"},
    "exact": {"engine": "batched", "flash_attn": False, "kv_unified": False},
    "unified": {"engine": "batched", "kv_unified": True},
    "unified-fa": {"engine": "batched", "kv_unified": True, "flash_attn": True},
    "split-fa": {"engine": "batched", "flash_attn": True},
    "batched-16": {"engine": "batched", "max_sequences": 16},
}


def run_variant(
    path: str, config: TMASConfig, options: dict[str, Any], threads: int | None = None
) -> dict[str, Any]:
    model = ChatLlamaCpp(
        model_path=path, n_ctx=4096, n_threads=threads or os.cpu_count(), seed=config.seed,
        **options,
    )  # fmt: skip
    model.invoke("hi", max_tokens=1)  # load the weights outside the timing
    engine = model._server() if model.engine == "batched" else None
    if engine is not None:
        engine.scheduler.stats.reset()
    graph = build_tmas_graph(config, llm=model)
    started = time.perf_counter()
    state = graph.invoke({"problem": PROBLEM, "gold_answer": "72"}, {"max_concurrency": 64})
    wall = time.perf_counter() - started
    usage = state["usage"]
    found: dict[str, Any] = {
        "wall": wall,
        "calls": sum(u.get("calls", 0) for u in usage.values()),
        "in": sum(u["input_tokens"] for u in usage.values()),
        "out": sum(u["output_tokens"] for u in usage.values()),
        "answer": state["final_answer"],
        "stats": engine.stats() if engine is not None else None,
    }
    close_engines()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default=None)
    parser.add_argument("-n", type=int, default=4)
    parser.add_argument("-m", type=int, default=2)
    parser.add_argument("-t", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--variants", default="serial,batched")
    parser.add_argument("--threads", type=int, help="CPU threads of the model (default: all)")
    parser.add_argument(
        "--toy",
        action="store_true",
        help="toy size, for CI: smollm2, N=1 M=1 T=1, 8 tokens for every role, one thread, "
        "the serial and batched variants",
    )
    args = parser.parse_args()
    budgets = {}
    if args.toy:
        args.model, args.n, args.m, args.t, args.max_tokens = "smollm2", 1, 1, 1, 8
        args.threads, args.variants = 1, "serial,batched"
        roles = ("verifier", "summary", "experience", "guideline")
        budgets = {f"{role}_max_tokens": args.max_tokens for role in roles}
    path = str(resolve_local_model(args.model))
    config = TMASConfig(
        n_candidates=args.n,
        n_verifications=args.m,
        max_iterations=args.t,
        solver_max_tokens=args.max_tokens,
        **budgets,
    )
    print(
        f"model={os.path.basename(path)} cores={os.cpu_count()} N={args.n} M={args.m} "
        f"T={args.t} solver_max_tokens={args.max_tokens}",
        flush=True,
    )
    serial_wall = None
    for name in args.variants.split(","):
        found = run_variant(path, config, VARIANTS[name], args.threads)
        serial_wall = serial_wall or (found["wall"] if name == "serial" else None)
        ratio = f"serial/this={serial_wall / found['wall']:.2f}" if serial_wall else ""
        line = (
            f"{name:<11} {found['wall']:7.1f} s  calls={found['calls']} in={found['in']} "
            f"out={found['out']}  answer={found['answer']}  {ratio}"
        )
        stats = found["stats"]
        if stats:
            line += (
                f"\n{'':<11} prefill {stats['prefill_tokens_per_s']:.0f} tok/s  decode "
                f"{stats['decode_tokens_per_s']:.1f} tok/s  prefix hit "
                f"{stats['prefix_hit_rate']:.0%}  computed prompt tokens "
                f"{stats['prefill_tokens']}/{stats['prompt_tokens']}  max batch "
                f"{stats['max_batch_sequences']}"
                f"\n{'':<11} where the time went: prompt steps "
                f"{stats['prefill_step_seconds']:.1f} s, "
                f"decode-only steps {stats['decode_only_seconds']:.1f} s, engine work around "
                f"llama_decode {stats['step_seconds'] - stats['decode_seconds']:.1f} s, engine "
                f"idle {found['wall'] - stats['step_seconds']:.1f} s"
                f"\n{'':<11} decode-only steps by width (sequences: steps, s): "
                + ", ".join(
                    f"{w}: {n:.0f}, {t:.1f}" for w, (n, t) in stats["decode_widths"].items()
                )
            )
        print(line, flush=True)


if __name__ == "__main__":
    main()
