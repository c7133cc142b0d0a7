"""Greedy answers per second from the in-process transformers backend (``--backend hf``), one
call at a time against calls decoded together (``max_sequences``), on the same prompts.

The prompts are held-out word problems of ``studies/data/hybrid_eval.jsonl`` under TMAS's
initial solver prompt, sent by ``--clients`` threads at once, as a study with that many
problems at once sends them. Each side answers every prompt; the figures are the sides' wall
time, generated tokens per second, and the answers that differ between sides (batched greedy
decoding is not bit-identical to one sequence at a time)::

    python benchmarks/hf_batching.py [--prompts 32 --clients 8 --batch 8 --max-tokens 128] [--toy]
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from langchain_core.messages import HumanMessage, SystemMessage

from tmas.llm.backend import BackendSpec, make_chat_model
from tmas.nodes.agents.solver import solver_prompt
from tmas.nodes.prompts import PromptSet

DATA = Path(__file__).parent / "studies" / "data" / "hybrid_eval.jsonl"


def prompts(count: int) -> list[list]:
    """The first ``count`` held-out problems as the solver's initial messages."""
    system = PromptSet().template("solver/system")
    rows = [json.loads(line) for line in DATA.read_text().splitlines()[:count]]
    tasks = [{"problem": r["problem"], "plan": {"mode": "initial"}} for r in rows]
    return [[SystemMessage(system), HumanMessage(solver_prompt(t))] for t in tasks]


def run_side(batch: int, chats: list[list], clients: int, max_tokens: int) -> dict:
    """Answer every chat with ``clients`` threads, ``batch`` greedy calls decoded together."""
    spec = BackendSpec(kind="hf", model="smollm2", max_sequences=batch)
    model = make_chat_model(spec, max_tokens=max_tokens, temperature=0)
    model.invoke("warm up", max_tokens=1)
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        answers = list(pool.map(model.invoke, chats))
    wall = time.perf_counter() - start
    tokens = sum(a.usage_metadata["output_tokens"] for a in answers)
    return {"wall_s": wall, "tokens_per_s": tokens / wall, "texts": [a.content for a in answers]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--toy", action="store_true", help="4 prompts, 8 tokens: a CI check")
    args = parser.parse_args()
    if args.toy:
        args.prompts, args.clients, args.batch, args.max_tokens = 4, 4, 4, 8
    chats = prompts(args.prompts)
    alone = run_side(1, chats, args.clients, args.max_tokens)
    together = run_side(args.batch, chats, args.clients, args.max_tokens)
    differ = sum(a != b for a, b in zip(alone["texts"], together["texts"], strict=True))
    print(f"{args.prompts} prompts, {args.clients} clients, {args.max_tokens} tokens each")
    for name, side in (("one at a time", alone), (f"batch {args.batch}", together)):
        print(f"{name:>14}: {side['wall_s']:.1f} s, {side['tokens_per_s']:.1f} tokens/s")
    print(f"speed-up: {alone['wall_s'] / together['wall_s']:.2f}x; "
          f"answers that differ: {differ}/{args.prompts}")  # fmt: skip


if __name__ == "__main__":
    main()
