"""OrchRM where the plan that wins depends on the problem: does a problem-aware reward model beat
plan-only baselines on held-out problems?

Problems mix easy one-step word problems (``word_problems.py``) with harder ones that hide a
trap (``trap_problems.py``). The plans differ in how they answer: ``direct`` replies with the
answer at once (``specs/direct_answer.yaml``, a 24-token budget), ``reason`` works step by step
(384 tokens). On easy problems both are right and the direct one costs a tenth; on trap
problems only reasoning is right (a pilot on 6 + 6: direct 4 of 6 easy, 0 of 6 traps): which
plan wins depends on the problem, so a reward model that reads the problem has something to
learn beyond which plan wins most.

The script runs, as a user would:

1. ``tmas eval`` of each plan ``--repeats`` times (seeds 1..K) on every problem, with the
   embedded model (labels rest on K runs per problem and plan, not one coin flip);
2. ``tmas orchrm pairs`` over all of them with ``--cheaper``, a success-rate margin and a
   share of the problems held out before pairing;
3. ``tmas orchrm train`` (SmolLM2 + LoRA + score head) on the training pairs;
4. on the held-out pairs: the pairwise accuracy of the reward model against the plan-only
   baselines (the plans' training win rates; a logistic model on plan features alone);
5. on the held-out problems: the accuracy (mean success rate over the runs) and tokens of the
   plan the reward model picks, against the best fixed plan (chosen on the training problems),
   a random plan and the oracle.

    python benchmarks/orchrm.py --out DIR [--easy 24] [--hard 24] [--repeats 3] [--model qwen]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

import yaml
from trap_problems import generate as trap_problems
from word_problems import ONE_STEP
from word_problems import generate as easy_problems

from tmas.orchrm.baselines import PlanFeatureModel, PlanPrior
from tmas.orchrm.choice import tie_break
from tmas.orchrm.pairs import held_out_problems, read_pairs
from tmas.orchrm.plan_space import load_plan_space

HERE = Path(__file__).resolve().parent


def run(command: list[str]) -> str:
    """Run a ``tmas`` command and return its standard output (exit on failure)."""
    print("$", " ".join(command), flush=True)
    done = subprocess.run([sys.executable, "-m", "tmas.cli", *command], capture_output=True,
                          text=True)  # fmt: skip
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"failed ({done.returncode}): tmas {' '.join(command)}")
    return done.stdout


def plan_space(args: argparse.Namespace) -> dict[str, Any]:
    return {"name": "direct-or-reason", "plans": [
        {"name": "direct", "graph": str(HERE / "specs" / "direct_answer.yaml"),
         "settings": {"solver_max_tokens": args.direct_tokens}},
        {"name": "reason", "graph": "majority_vote",
         "settings": {"n_candidates": 1, "solver_max_tokens": args.reason_tokens}},
    ]}  # fmt: skip


def evaluate(plan: dict[str, Any], seed: int, data: Path, out: Path,
             args: argparse.Namespace) -> Path:  # fmt: skip
    """One run of a plan over every problem (resumable)."""
    folder = out / f"{plan['name']}-s{seed}"
    command = ["eval", "--data", str(data), "--out", str(folder), "--graph", plan["graph"],
               "--model", args.model, "--seed", str(seed), "--db", str(out / "runs.sqlite"),
               "--quiet"]  # fmt: skip
    if args.threads:
        command += ["--threads", str(args.threads)]
    for key, value in plan["settings"].items():
        command += ["--set", f"{key}={json.dumps(value)}"]
    run(command)
    return folder


def outcomes(folders: dict[str, list[Path]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per plan and problem id: success rate over the runs and mean tokens."""
    found: dict[str, dict[str, dict[str, float]]] = {}
    for name, runs in folders.items():
        per_problem: dict[str, list[dict]] = defaultdict(list)
        for folder in runs:
            for line in (folder / "results.jsonl").read_text().splitlines():
                row = json.loads(line)
                if row["status"] == "finished":  # as tmas orchrm pairs counts them
                    per_problem[row["id"]].append(row)
        found[name] = {pid: {"rate": mean(float(r["correct"]) for r in rows),
                             "tokens": mean(r["tokens_in"] + r["tokens_out"] for r in rows)}
                       for pid, rows in per_problem.items()}  # fmt: skip
    return found


def selection(ids: list[str], texts: dict[str, str], plans: list, by_plan: dict, rm: Any,
              fixed: str) -> dict[str, dict[str, float]]:  # fmt: skip
    """Accuracy and tokens on the problems ``ids`` of the RM's pick, the fixed plan, a random
    plan (the mean over plans) and the oracle (the best plan per problem, cheaper on ties)."""
    picks: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for pid in ids:
        scores = rm.score(texts[pid], [plan.text for plan in plans])
        top = [i for i, score in enumerate(scores) if score == max(scores)]
        chosen = plans[tie_break(top, texts[pid], seed=0)].name  # as --graph auto chooses
        options = {p.name: (by_plan[p.name][pid]["rate"], by_plan[p.name][pid]["tokens"])
                   for p in plans}  # fmt: skip
        picks["reward model"].append(options[chosen])
        picks[f"fixed ({fixed})"].append(options[fixed])
        picks["random"].append(tuple(mean(v[i] for v in options.values()) for i in (0, 1)))
        picks["oracle"].append(max(options.values(), key=lambda v: (v[0], -v[1])))
    return {name: {"accuracy": mean(v[0] for v in values), "tokens": mean(v[1] for v in values)}
            for name, values in picks.items()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--easy", type=int, default=24, help="one-step word problems")
    parser.add_argument("--hard", type=int, default=24, help="problems with a trap")
    parser.add_argument("--repeats", type=int, default=3, help="runs per plan and problem")
    parser.add_argument("--direct-tokens", type=int, default=24)
    parser.add_argument("--reason-tokens", type=int, default=384)
    parser.add_argument("--held-out", type=float, default=0.25)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--model", default="qwen")
    parser.add_argument("--threads", type=int, help="CPU threads of the embedded model")
    args = parser.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    easy = easy_problems(args.easy, seed=21, kinds=ONE_STEP)
    hard = trap_problems(args.hard, seed=22)
    problems = [p for pair in zip(easy, hard, strict=False) for p in pair]
    problems += easy[len(hard) :] + hard[len(easy) :]
    data = out / "problems.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in problems))
    space = plan_space(args)
    (out / "plans.yaml").write_text(yaml.safe_dump(space, sort_keys=False))
    folders = {plan["name"]: [evaluate(plan, seed, data, out, args)
                              for seed in range(1, args.repeats + 1)]
               for plan in space["plans"]}  # fmt: skip
    evaluations = [str(folder) for runs in folders.values() for folder in runs]
    shown = run(["orchrm", "pairs", *evaluations, "--out", str(out / "pairs.jsonl"), "--cheaper",
                 "--held-out", str(args.held_out)])  # fmt: skip
    report = json.loads(shown.strip().splitlines()[-1])
    run(["orchrm", "train", str(out / "pairs.jsonl"), "--out", str(out / "rm"), "--eval-pairs",
         str(out / "pairs.held_out.jsonl"), "--epochs", str(args.epochs), "--quiet"])  # fmt: skip
    train_pairs = read_pairs(out / "pairs.jsonl")
    held_pairs = read_pairs(out / "pairs.held_out.jsonl")
    record = json.loads((out / "rm" / "training.json").read_text())
    prior, features = PlanPrior.fit(train_pairs), PlanFeatureModel.fit(train_pairs)
    accuracy = {"reward model": record["pairwise_accuracy"]["held_out"],
                "plan prior (training win rates)": prior.accuracy(held_pairs),
                "logistic on plan features": features.accuracy(held_pairs)}  # fmt: skip
    plans = list(load_plan_space(out / "plans.yaml").plans)
    by_plan = outcomes(folders)
    answered = {pid for results in by_plan.values() for pid in results}  # as the CLI splits
    texts_answered = [p["problem"] for p in problems if p["id"] in answered]
    held_texts = held_out_problems(texts_answered, args.held_out, seed=0)
    texts = {p["id"]: p["problem"] for p in problems}
    all_held = [p["id"] for p in problems if p["id"] in answered and p["problem"] in held_texts]
    train_ids = [p["id"] for p in problems if p["id"] in answered and p["id"] not in all_held]
    fixed = max(by_plan, key=lambda name: mean(by_plan[name][i]["rate"] for i in train_ids))
    from tmas.orchrm.reward_model import load_reward_model

    chosen = selection(all_held, texts, plans, by_plan, load_reward_model(out / "rm"), fixed)
    result = {
        "pairs": report,
        "held_out_pairwise_accuracy": accuracy,
        "held_out_problems": len(all_held),
        "held_out_selection": chosen,
    }
    (out / "report.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
