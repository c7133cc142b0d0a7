"""The embedded engine's settings measured side by side: sequences per batch, flash
attention, split or unified KV cache, threads.

Every variant serves the same B concurrent requests (different prompts of equal length,
seeded sampling, fixed answer length) through a fresh engine; prints aggregate decode and
prefill tokens/s from the engine's own counters, and each variant's ratio to the first.

    python benchmarks/engine_settings.py [--model qwen|smollm2|PATH] [--tokens 64] [--toy]

``--sweep 1,4,8`` instead serves every width in turn through one engine per combination of
flash attention and KV layout, all requests sharing one prompt of ``--facts`` sentences
(40 make about 720 tokens; the prompt is computed once and copied), and prints decode
tokens/s by width: batching alone, without the cost of computing different prompts.
"""

from __future__ import annotations

import argparse
import functools
import os
import time
from concurrent.futures import ThreadPoolExecutor

from tmas.llm.engine import EngineSettings, LlamaEngine, Sampling
from tmas.llm.model_files import resolve_local_model

TOPICS = [
    "rivers",
    "bridges",
    "volcanoes",
    "forests",
    "deserts",
    "glaciers",
    "islands",
    "canyons",
    "lakes",
    "caves",
    "reefs",
    "plains",
    "valleys",
    "dunes",
    "geysers",
    "fjords",
]


def chat(i: int) -> list[dict[str, str]]:
    topic = TOPICS[i % len(TOPICS)]
    return [{"role": "user", "content": f"Write a long essay about {topic}, number {i}."}]


def measure(settings: EngineSettings, width: int, tokens: int) -> dict[str, float]:
    engine = LlamaEngine(settings)
    engine.complete(chat(99), max_tokens=1, sampling=Sampling(0.0))  # load outside the timing
    engine.scheduler.stats.reset()
    started = time.perf_counter()
    with ThreadPoolExecutor(width) as pool:
        outcomes = list(
            pool.map(
                lambda i: engine.complete(
                    chat(i), max_tokens=tokens, sampling=Sampling(0.8, seed=i)
                ),
                range(width),
            )
        )
    wall = time.perf_counter() - started
    stats = engine.stats()
    engine.close()
    output = sum(o.output_tokens for o in outcomes)
    return {
        "wall": wall,
        "out_per_s": output / wall,
        "decode": stats["decode_tokens_per_s"],
        "prefill": stats["prefill_tokens_per_s"],
    }


def sweep(path: str, widths: list[int], facts: int, tokens: int, threads: int | None) -> None:
    text = " ".join(f"Fact {i}: the value of item {i} is {i * 7}." for i in range(facts))
    shared = [{"role": "user", "content": text + " Summarise these facts in a long essay."}]
    for flash, unified in (("off", False), ("on", False), ("off", True), ("on", True)):
        settings = EngineSettings(
            path, n_ctx=2048, max_sequences=max(widths), n_threads=threads, flash_attn=flash,
            kv_unified=unified,
        )  # fmt: skip
        engine = LlamaEngine(settings)
        engine.complete(shared, max_tokens=1, sampling=Sampling(0.0))  # load, cache the prompt
        found = []
        for width in widths:
            engine.scheduler.stats.reset()
            ask = functools.partial(engine.complete, shared, max_tokens=tokens)
            with ThreadPoolExecutor(width) as pool:
                list(pool.map(lambda i, ask=ask: ask(sampling=Sampling(0.8, seed=i)), range(width)))
            found.append(f"B={width} {engine.stats()['decode_tokens_per_s']:.1f}")
        prompt = len(engine.model.prompt_tokens(shared))
        engine.close()
        print(
            f"flash_attn={flash} kv_unified={unified} prompt={prompt} tokens: "
            + "  ".join(found)
            + " tok/s",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default=None)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--sweep", default=None, help="widths, e.g. 1,4,8")
    parser.add_argument("--facts", type=int, default=40)
    parser.add_argument("--threads", type=int, help="CPU threads of each engine (default: all)")
    parser.add_argument(
        "--toy",
        action="store_true",
        help="toy size, for CI: smollm2, 8 tokens per answer, one thread, two variants (B=1; B=2 "
        "with flash attention and a unified KV cache), then the sweep at widths 1,2 over 2 facts",
    )
    args = parser.parse_args()
    if args.toy:
        args.model, args.tokens, args.threads, args.sweep, args.facts = "smollm2", 8, 1, "1,2", 2
    path = str(resolve_local_model(args.model))
    if args.sweep and not args.toy:
        sweep(path, [int(w) for w in args.sweep.split(",")], args.facts, args.tokens, args.threads)
        return
    cores = os.cpu_count() or 1
    variants = [
        ("B=1 fa=off split", 1, {}),
        ("B=4 fa=off split", 4, {}),
        ("B=8 fa=off split", 8, {}),
        ("B=16 fa=off split", 16, {}),
        ("B=8 fa=on split", 8, {"flash_attn": "on"}),
        ("B=8 fa=off unified", 8, {"kv_unified": True}),
        ("B=8 fa=on unified", 8, {"kv_unified": True, "flash_attn": "on"}),
        (f"B=8 fa=off split threads={max(1, cores // 2)}", 8, {"n_threads": max(1, cores // 2)}),
    ]
    if args.toy:
        variants = [
            ("B=1 fa=off split", 1, {}),
            ("B=2 fa=on unified", 2, {"kv_unified": True, "flash_attn": "on"}),
        ]
    print(f"model {os.path.basename(path)}, {cores} cores, {args.tokens} tokens per answer")
    base = None
    for name, width, extra in variants:
        options = {"flash_attn": "off", "n_threads": args.threads, **extra}
        settings = EngineSettings(path, n_ctx=1024, max_sequences=max(width, 1), **options)
        found = measure(settings, width, args.tokens)
        base = base or found["out_per_s"]
        print(
            f"{name:36s} wall {found['wall']:6.1f}s  out {found['out_per_s']:6.1f} tok/s  "
            f"decode {found['decode']:6.1f} tok/s  prefill {found['prefill']:6.1f} tok/s  "
            f"x{found['out_per_s'] / base:4.2f}",
            flush=True,
        )
    if args.toy:
        sweep(path, [int(w) for w in args.sweep.split(",")], args.facts, args.tokens, args.threads)


if __name__ == "__main__":
    main()
