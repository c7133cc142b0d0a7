"""OrchRM on a GSM8K slice: the reward-model-chosen plan against the best fixed plan, a random
plan and the oracle, in accuracy and tokens, side by side.

The script runs, as a user would:

1. ``tmas eval`` of each plan of a small plan space (cheap plans: one sample, a majority vote
   of three, PaCoRe 2 -> 1, self-refine over two rounds; with ``--with-tmas`` also TMAS with 2
   candidates, 1 check and 2 iterations) on the first ``--problems`` problems of
   ``../shared/data/gsm8k_test_dev.jsonl`` with the embedded Qwen model;
2. ``tmas orchrm pairs`` over the evaluations of the first half of the problems (train);
3. ``tmas orchrm train`` (SmolLM2 + LoRA + score head);
4. for every problem of the second half (test), the reward model scores each plan before
   anything runs (the scorer ``--graph auto`` uses); the chosen plan's saved run on that
   problem gives its correctness and tokens.

    python benchmarks/orchrm.py [--problems 20] [--out DIR] [--model qwen] [--with-tmas]
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

import yaml

from tmas.eval.data import load_problems

PLAN_SPACE = {
    "name": "gsm8k-cheap",
    "plans": [
        {"name": "single", "graph": "majority_vote", "settings": {"n_candidates": 1}},
        {"name": "vote3", "graph": "majority_vote", "settings": {"n_candidates": 3}},
        {"name": "pacore", "graph": "pacore", "settings": {"round_widths": [2, 1]}},
        {
            "name": "refine",
            "graph": "self_refine",
            "settings": {"n_candidates": 1, "max_iterations": 2},
        },
    ],
}
TMAS_PLAN = {
    "name": "tmas",
    "graph": "tmas",
    "settings": {"n_candidates": 2, "n_verifications": 1, "max_iterations": 2},
}
"""20 calls a problem (about 4 minutes with the embedded Qwen on 2 cores): ``--with-tmas``."""
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k_test_dev.jsonl"


def run(command: list[str]) -> str:
    """Run a ``tmas`` command, echo it, and return its standard output."""
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode not in (0,):
        print(done.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}")
    return done.stdout


def evaluate(plan: dict[str, Any], data: Path, out: Path, model: str) -> Path:
    """Evaluate one plan with its settings (resumable: a rerun finishes what is missing)."""
    folder = out / f"eval-{plan['name']}"
    sets = [f"{k}={json.dumps(v)}" for k, v in plan["settings"].items()]
    command = ["tmas", "eval", "--data", str(data), "--out", str(folder), "--graph", plan["graph"]]
    command += ["--model", model, "--concurrency", "2", "--quiet"]
    for item in sets:
        command += ["--set", item]
    run(command)
    return folder


def rows_by_problem(folder: Path) -> dict[str, dict[str, Any]]:
    lines = (folder / "results.jsonl").read_text().splitlines()
    return {row["id"]: row for row in map(json.loads, lines) if row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("orchrm-benchmark"))
    parser.add_argument("--model", default="qwen")
    parser.add_argument("--max-tokens", type=int, default=320)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--with-tmas", action="store_true", help="add a small TMAS plan")
    args = parser.parse_args()
    if args.with_tmas:
        PLAN_SPACE["plans"].append(TMAS_PLAN)
    args.out.mkdir(parents=True, exist_ok=True)
    problems = load_problems(str(DATA) if DATA.exists() else "gsm8k", args.problems)
    half = len(problems) // 2
    splits = {"train": problems[:half], "test": problems[half:]}
    data_files = {}
    for split, chosen in splits.items():
        data_files[split] = args.out / f"{split}.jsonl"
        data_files[split].write_text("".join(p.model_dump_json() + "\n" for p in chosen))
    space_path = args.out / "plans.yaml"
    for plan in PLAN_SPACE["plans"]:  # the answer budget is a setting of every plan
        plan["settings"]["solver_max_tokens"] = args.max_tokens
    space_path.write_text(yaml.safe_dump(PLAN_SPACE, sort_keys=False))
    started = time.monotonic()
    folders: dict[str, dict[str, Path]] = {"train": {}, "test": {}}
    for split in ("train", "test"):
        for plan in PLAN_SPACE["plans"]:
            folders[split][plan["name"]] = evaluate(
                plan, data_files[split], args.out / split, args.model
            )
    eval_seconds = time.monotonic() - started
    pairs = args.out / "pairs.jsonl"
    report = run(["tmas", "orchrm", "pairs", *map(str, folders["train"].values()),
                  "--out", str(pairs), "--held-out", "0"])  # fmt: skip
    started = time.monotonic()
    trained = run(["tmas", "orchrm", "train", str(pairs), "--out", str(args.out / "rm"),
                   "--epochs", str(args.epochs), "--eval-fraction", "0", "--quiet"])  # fmt: skip
    train_seconds = time.monotonic() - started
    from tmas.orchrm.choice import PlanChooser
    from tmas.orchrm.plan_space import load_plan_space

    space = load_plan_space(space_path)
    chooser = PlanChooser(str(args.out / "rm" / "adapter"), k=len(space.plans), space=space)
    results = {name: rows_by_problem(folder) for name, folder in folders["test"].items()}
    train_results = {name: rows_by_problem(f) for name, f in folders["train"].items()}
    train_accuracy = {n: mean(r["correct"] for r in rows.values()) for n, rows in
                      train_results.items()}  # fmt: skip
    best_fixed = max(train_accuracy, key=lambda n: train_accuracy[n])
    picks = {}
    for problem in splits["test"]:
        picks[problem.id] = chooser.choose(problem.problem).chosen.name

    def tokens(row: dict[str, Any]) -> int:
        return row["tokens_in"] + row["tokens_out"]

    ids = [p.id for p in splits["test"]]
    table = {
        "rm-chosen": [results[picks[i]][i] for i in ids],
        f"best fixed on train ({best_fixed})": [results[best_fixed][i] for i in ids],
    }
    for name in results:
        table[f"fixed {name}"] = [results[name][i] for i in ids]
    print(f"\npairs: {report.strip()}\nreward model: {trained.strip()}")
    print(f"train accuracy by plan: {json.dumps(train_accuracy)}")
    print(f"chosen plans on test: {json.dumps(picks)}")
    print("\n| system | accuracy | tokens/problem | tokens vs best fixed |\n|---|---|---|---|")
    reference = mean(tokens(r) for r in table[f"best fixed on train ({best_fixed})"])
    for name, rows in table.items():
        cost = mean(tokens(r) for r in rows)
        print(f"| {name} | {mean(r['correct'] for r in rows):.1%} | {cost:,.0f} | "
              f"{cost / reference:.2f} |")  # fmt: skip
    random_accuracy = mean(mean(results[n][i]["correct"] for n in results) for i in ids)
    random_cost = mean(mean(tokens(results[n][i]) for n in results) for i in ids)
    print(f"| random plan (expected) | {random_accuracy:.1%} | {random_cost:,.0f} | "
          f"{random_cost / reference:.2f} |")  # fmt: skip
    oracle = mean(any(results[n][i]["correct"] for n in results) for i in ids)
    print(f"| oracle (any plan right) | {oracle:.1%} | - | - |")
    trained_for = json.loads((args.out / "rm" / "training.json").read_text())["train_seconds"]
    minutes = (
        f"this invocation: evaluations {eval_seconds / 60:.1f} min (finished problems are not "
        f"run again), training {train_seconds / 60:.1f} min; the reward model trained for "
        f"{trained_for / 60:.1f} min"
    )
    print(f"\n{len(splits['train'])} train / {len(ids)} test problems; {minutes}")


if __name__ == "__main__":
    main()
