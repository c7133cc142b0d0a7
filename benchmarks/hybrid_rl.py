"""Hybrid-reward GRPO on SmolLM2 for small arithmetic problems, before and after, side by side.

Training rows are problems generated with one seed, each presented through a real TMAS solver
prompt of one of the three kinds (initial: normal; exploit, with a wrong earlier attempt, its
verification summary and experience items: experience; explore, with a guideline bank:
guideline), built by the same code that exports rows from saved runs. Evaluation problems come
from another seed. The script runs, as a user would:

1. ``tmas eval --backend hf --model smollm2`` (majority vote of N samples) on the evaluation
   problems with the base model;
2. ``tmas train grpo`` on the rows (novelty judged by the embedded llama.cpp SmolLM2);
3. the same evaluation with ``--adapter``;

and prints the mean reward per step (total, each component, each ``_source``: first and last
fifth of the steps, and every few steps), the evaluation accuracy and Pass@1 before and after,
and the wall time of each part.

    python benchmarks/hybrid_rl.py [--steps 60] [--train 60] [--eval 20] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tmas.nodes.prompts import PromptSet
from tmas.storage.run_registry import RunRecord
from tmas.training.data_files import write_rows
from tmas.training.rollouts import rollout_row

NAMES = ("Tom", "Ana", "Li", "Sara", "Omar", "Maya")
ITEMS = ("apples", "pencils", "stickers", "marbles", "books", "coins")
GUIDELINES = ["Add the two amounts directly", "Write an equation with one unknown"]
EXPERIENCES = [
    {"id": "e1", "text": "Verified: 'more' means the amounts are added."},
    {"id": "e2", "text": "Pitfall: multiplying the two numbers instead of adding them."},
]


def make_problem(rng: random.Random) -> tuple[str, int]:
    """One sum of two small numbers, asked in one of a few ways (SmolLM2-135M answered such
    sums right about a quarter of the time in 64 tokens), and its answer."""
    a, b = rng.randint(2, 12), rng.randint(2, 12)
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    asked = rng.choice(
        (
            f"What is {a} + {b}?",
            f"Compute {a} + {b}.",
            f"{name} has {a} {item} and gets {b} more. How many {item} does {name} have?",
        )
    )
    return asked, a + b


def training_rows(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` rows cycling through the three kinds, with real TMAS solver prompts."""
    rng = random.Random(seed)
    prompts, rows = PromptSet(), []
    for index in range(count):
        problem, answer = make_problem(rng)
        mode = ("initial", "exploit", "explore")[index % 3]
        task: dict[str, Any] = {
            "problem": problem,
            "plan": {"iteration": 1 + (mode != "initial"), "index": index, "mode": mode},
        }
        if mode == "exploit":
            wrong = answer + rng.choice((-2, -1, 1, 2))
            task["parent"] = {
                "text": f"I think the total is {wrong}. \\boxed{{{wrong}}}",
                "summary": "The verifiers found the final arithmetic wrong.",
            }
            task["experiences"] = EXPERIENCES
        if mode == "explore":
            task["guidelines"] = GUIDELINES
        record = RunRecord(
            f"synthetic-{seed}", 0.0, problem, str(answer), "tmas", {}, {}, None, "done", None, 0
        )
        rows.append(rollout_row(task, prompts, record, None))
    return rows


def eval_problems(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    found = []
    for index in range(count):
        problem, answer = make_problem(rng)
        found.append({"id": f"q{index}", "problem": problem, "answer": str(answer)})
    return found


def run(command: list[str], label: str) -> float:
    """Run a ``tmas`` command; return its wall time (exit on failure)."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tmas.cli", *command], text=True)
    if done.returncode not in (0, 3):  # 3: finished with degraded problems
        sys.exit(f"{label} failed with exit code {done.returncode}")
    return time.monotonic() - started


def evaluate(data: Path, out: Path, db: Path, n: int, adapter: Path | None) -> float:
    command = [
        "eval", "--data", str(data), "--out", str(out), "--db", str(db),
        "--graph", "majority_vote", "-n", str(n), "--max-tokens", "64", "--temperature", "0.7",
        "--backend", "hf", "--model", "smollm2", "--quiet", "--seed", "7",
    ]  # fmt: skip
    if adapter is not None:
        command += ["--adapter", str(adapter)]
    return run(command, "evaluation")


def summary_of(out: Path) -> dict[str, float]:
    summary = json.loads((out / "summary.json").read_text())
    return {"accuracy": summary["accuracy"], "pass@1": summary["pass_at_1_per_iteration"][0]}


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def reward_table(metrics: list[dict[str, Any]]) -> None:
    """Mean of every reward series over the first and the last fifth of the steps."""
    lines = [line for line in metrics if "loss" in line]
    fifth = max(1, len(lines) // 5)
    names = sorted(
        {k for line in lines for k in line if k.startswith(("reward", "rewards/"))}
        - {k for line in lines for k in line if k.endswith("std")}
    )
    print(f"\n{'reward series':38s} {'first 1/5':>10s} {'last 1/5':>10s}")
    for name in names:
        first = mean([line[name] for line in lines[:fifth] if name in line])
        last = mean([line[name] for line in lines[-fifth:] if name in line])
        show = [f"{v:10.3f}" if v is not None else f"{'-':>10s}" for v in (first, last)]
        print(f"{name:38s} {show[0]} {show[1]}")
    print("\nstep  reward  correct  kl      length")
    for line in lines[:: max(1, len(lines) // 12)]:
        print(
            f"{line['step']:4d}  {line.get('reward', 0):6.3f}  "
            f"{line.get('rewards/correctness/mean', 0):7.3f}  {line.get('kl', 0):6.4f}  "
            f"{line.get('completions/mean_length', 0):6.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--train", type=int, default=60, help="training rows")
    parser.add_argument("--eval", type=int, default=20, help="evaluation problems")
    parser.add_argument("--samples", type=int, default=4, help="N of the evaluation's vote")
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--max-completion-length", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="hybrid_rl."))
    out.mkdir(parents=True, exist_ok=True)
    write_rows(training_rows(args.train, seed=1), out / "train.parquet")
    write_rows(eval_problems(args.eval, seed=2), out / "eval.jsonl")
    db = out / "runs.sqlite"
    before_s = evaluate(out / "eval.jsonl", out / "eval_before", db, args.samples, None)
    train_s = run(
        [
            "train", "grpo", str(out / "train.parquet"), "--out", str(out / "train"),
            "--steps", str(args.steps), "--generations", str(args.generations),
            "--max-completion-length", str(args.max_completion_length),
            "--learning-rate", str(args.learning_rate), "--temperature", "0.8",
            "--judge-backend", "llamacpp", "--quiet",
        ],  # fmt: skip
        "training",
    )
    adapter = out / "train" / "adapter"
    after_s = evaluate(out / "eval.jsonl", out / "eval_after", db, args.samples, adapter)
    metrics = [json.loads(line) for line in (out / "train" / "metrics.jsonl").open()]
    before, after = summary_of(out / "eval_before"), summary_of(out / "eval_after")
    print(f"\nhybrid-reward GRPO, SmolLM2-135M, {args.steps} steps, out: {out}")
    reward_table(metrics)
    print(f"\n{'evaluation (' + str(args.eval) + ' problems)':30s} {'base':>8s} {'adapter':>8s}")
    for key in ("accuracy", "pass@1"):
        print(f"{key:30s} {before[key]:8.3f} {after[key]:8.3f}")
    print(
        f"\nwall: eval base {before_s:.0f} s, train {train_s:.0f} s, "
        f"eval adapter {after_s:.0f} s"
    )


if __name__ == "__main__":
    main()
