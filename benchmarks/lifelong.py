"""Lifelong memory on a GSM8K slice: the same problems in the same order, memory off and on, at
the same budget (N, M, T and token limits), with the embedded Qwen model.

The script runs, as a user would, ``tmas eval --concurrency 1`` (one problem after another,
in the data's order) twice over the first ``--problems`` problems of
``../shared/data/gsm8k_test_dev.jsonl``: once plain, once with ``--memory``. It prints
accuracy over the whole sequence, its first half and its second half (memory can only help
once something is in it), tokens per problem, and for the memory run how many items each
problem started with from memory and how many items the memory held at the end.

    python benchmarks/lifelong.py [--problems 20] [--out DIR] [--model qwen]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from statistics import mean
from typing import Any

from tmas.eval.data import load_problems
from tmas.lifecycle.history import saved_state
from tmas.memory.lifelong import LifelongMemory
from tmas.storage import open_storage

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k_test_dev.jsonl"
MEMORY = "gsm8k-lifelong"


def evaluate(data: Path, out: Path, db: Path, args: argparse.Namespace, memory: bool) -> Path:
    """One in-order evaluation (resumable: a rerun finishes what is missing)."""
    folder = out / ("memory-on" if memory else "memory-off")
    command = [
        "tmas", "eval", "--data", str(data), "--out", str(folder), "--graph", "tmas",
        "--model", args.model, "--concurrency", "1", "--db", str(db), "--quiet",
        "-n", str(args.n), "-m", str(args.m), "-t", str(args.t),
        "--max-tokens", str(args.max_tokens),
    ]  # fmt: skip
    if memory:
        command += ["--memory", MEMORY]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}")
    return folder


def rows_of(folder: Path) -> list[dict[str, Any]]:
    lines = (folder / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def seeded_counts(db: Path, rows: list[dict[str, Any]]) -> list[int]:
    """How many memory items each run's banks started with."""
    storage = open_storage(db)
    try:
        counts = []
        for row in rows:
            state = saved_state(storage, row["run_id"], full_history=False)
            banks = (state.get("experience_bank") or []) + (state.get("guideline_bank") or [])
            counts.append(sum(1 for item in banks if item.get("origin") == "memory"))
        return counts
    finally:
        storage.close()


def memory_size(db: Path) -> int:
    storage = open_storage(db)
    try:
        return len(LifelongMemory(storage.store(), MEMORY).items())
    finally:
        storage.close()


def summary(name: str, rows: list[dict[str, Any]]) -> str:
    half = len(rows) // 2

    def accuracy(part: list[dict[str, Any]]) -> str:
        return f"{100 * mean(r['correct'] for r in part):7.1f}%" if part else f"{'-':>8}"

    tokens = mean(r["tokens_in"] + r["tokens_out"] for r in rows)
    answered = sum(r["selected_answer"] is not None for r in rows)
    return (f"{name:<11} {accuracy(rows)} {accuracy(rows[:half])} {accuracy(rows[half:])} "
            f"{tokens:>14.0f} {answered:>5}/{len(rows)}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("lifelong-benchmark"))
    parser.add_argument("--model", default="qwen")
    parser.add_argument("-n", type=int, default=2)
    parser.add_argument("-m", type=int, default=1)
    parser.add_argument("-t", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=320)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    problems = load_problems(str(DATA) if DATA.exists() else "gsm8k", args.problems)
    data = args.out / "problems.jsonl"
    data.write_text("".join(p.model_dump_json() + "\n" for p in problems))
    db = args.out / "runs.sqlite"
    timings = {}
    results = {}
    for memory in (False, True):
        started = time.monotonic()
        results[memory] = rows_of(evaluate(data, args.out, db, args, memory))
        timings[memory] = time.monotonic() - started
    print(f"{len(problems)} GSM8K problems in order, tmas N={args.n} M={args.m} T={args.t}, "
          f"{args.max_tokens}-token answers, model {args.model}")  # fmt: skip
    print(f"{'':<11} {'all':>8} {'1st half':>8} {'2nd half':>8} {'tokens/problem':>14} "
          f"{'answered':>8}")  # fmt: skip
    print(summary("memory off", results[False]))
    print(summary("memory on", results[True]))
    seeded = seeded_counts(db, results[True])
    print(f"memory items each problem started with: {seeded}")
    print(f"problems shown memory items: {sum(1 for c in seeded if c)} of {len(seeded)}; "
          f"items in memory at the end: {memory_size(db)}")
    print(f"wall time: off {timings[False]:.0f} s, on {timings[True]:.0f} s")


if __name__ == "__main__":
    main()
