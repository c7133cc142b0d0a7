"""OrchRM on a study's runs: can anything that reads the problem pick the plan better than the
plan prior, on problems it has not seen?

The runs come from a study (``studies/orchrm.yaml``: ``direct`` answers at once in 24 tokens,
``reason`` works step by step in 384; three runs of each per problem, seeds 1-3; one-step word
problems, where both are right and direct costs a tenth, mixed with trap problems, where only
reasoning is right). The script then, as a user would:

1. ``tmas orchrm pairs`` over every run with the cost-aware rule (``--cheaper
   --cost-tolerance``): a plan right more often by the success margin wins; the clearly cheaper
   plan wins when its success rate is within the tolerance of the costlier one's;
2. without any model: leave one problem out, the pairwise accuracy of the plan prior, of a
   logistic model on plan features, and of a problem-family x plan logistic (the family is the
   problem's kind in the study's data), each with a 95% interval over problems. If the family
   model does not beat the prior, the labels carry no problem-dependent signal to learn;
3. ``tmas orchrm train`` (SmolLM2 + LoRA + score head) in k folds of problems, each fold's
   pairs held out of its training: the pooled held-out pairwise accuracy beside the prior's
   and the family model's on the same folds, and on each fold's problems the accuracy and
   tokens of the plan the reward model picks against the best fixed plan, a random plan and the
   oracle.

    tmas study studies/orchrm.yaml --out /tmp/orch          # the runs (about 30 minutes)
    python benchmarks/orchrm.py --study /tmp/orch [--folds 4] [--cost-tolerance 0.34]
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

from word_problems import ONE_STEP

from tmas.eval.intervals import bootstrap_mean, paired_seed_difference
from tmas.orchrm.baselines import (
    FamilyPlanModel,
    PlanFeatureModel,
    PlanPrior,
    leave_one_problem_out,
)
from tmas.orchrm.choice import tie_break
from tmas.orchrm.pairs import held_out_problems, read_pairs

HERE = Path(__file__).resolve().parent


def run(command: list[str]) -> str:
    """Run a ``tmas`` command and return its standard output (exit on failure)."""
    print("$ tmas", " ".join(command), flush=True)
    done = subprocess.run([sys.executable, "-m", "tmas.cli", *command], capture_output=True,
                          text=True)  # fmt: skip
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"failed ({done.returncode}): tmas {' '.join(command)}")
    return done.stdout


def study_runs(study: Path) -> dict[str, list[Path]]:
    """The evaluation folders of the study, by condition (plan)."""
    found: dict[str, list[Path]] = defaultdict(list)
    for folder in sorted((study / "conditions").glob("*/seed-*")):
        if (folder / "results.jsonl").is_file():
            found[folder.parent.name].append(folder)
    if len(found) < 2:
        raise SystemExit(f"{study}: no finished study with two conditions (run tmas study first)")
    return dict(found)


def study_problems(study: Path) -> list[dict[str, Any]]:
    """The study's problems (its data file, as its design names it), in the study's order."""
    design = json.loads((study / "design.json").read_text())
    data = Path(design["study"]["problems"]["data"])
    path = data if data.is_absolute() else HERE / "studies" / data
    by_id = {row["id"]: row for row in map(json.loads, path.read_text().splitlines())}
    return [by_id[pid] for pid in design["problem_ids"]]


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


def selection(ids: list[str], texts: dict[str, str], plans: dict[str, str], by_plan: dict,
              rm: Any, fixed: str) -> dict[str, list[tuple[float, float]]]:  # fmt: skip
    """Per problem of ``ids``: (success rate, tokens) of the RM's pick, the fixed plan, a
    random plan (the mean over plans) and the oracle (the best plan, cheaper on ties)."""
    picks: dict[str, list[tuple[float, float]]] = defaultdict(list)
    names = list(plans)
    for pid in ids:
        scores = rm.score(texts[pid], [plans[name] for name in names])
        top = [i for i, score in enumerate(scores) if score == max(scores)]
        chosen = names[tie_break(top, texts[pid], seed=0)]  # as --graph auto chooses
        options = {n: (by_plan[n][pid]["rate"], by_plan[n][pid]["tokens"]) for n in names}
        picks["reward model"].append(options[chosen])
        picks[f"fixed ({fixed})"].append(options[fixed])
        picks["random"].append(tuple(mean(v[i] for v in options.values()) for i in (0, 1)))
        picks["oracle"].append(max(options.values(), key=lambda v: (v[0], -v[1])))
    return picks


def family_of_problem(problem: dict, family: str) -> str:
    """A problem's family: its ``kind``, or (``group``) one-step against trap."""
    kind = str(problem.get("kind") or "unknown")
    if family == "kind":
        return kind
    return "one-step" if kind in ONE_STEP else "trap"


def pair_verdict(rm: Any, pair: dict) -> float:
    """1 when the reward model scores the chosen plan above the rejected one, 0.5 on a tie."""
    chosen, rejected = rm.score(pair["input"], [pair["chosen"], pair["rejected"]])
    return 1.0 if chosen > rejected else 0.5 if chosen == rejected else 0.0


def folds_of(pairs: list[dict], folds: int) -> list[set[str]]:
    """``folds`` disjoint sets of problem ids (seeded by text hash), every problem in one."""
    problems = sorted({p["problem_id"] for p in pairs})
    rest, found = list(problems), []
    for index in range(folds, 0, -1):
        held = held_out_problems(rest, 1 / index, seed=index) if index > 1 else set(rest)
        found.append(held)
        rest = [p for p in rest if p not in held]
    return found


def write_pairs(path: Path, pairs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    return path


def interval(scores: list[list[float]]) -> list[float]:
    value, low, high = bootstrap_mean(scores)
    return [value, low, high]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", type=Path, required=True, help="a finished study folder")
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--success-margin", type=float, default=0.5)
    parser.add_argument("--cost-tolerance", type=float, default=0.34)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument(
        "--family",
        choices=("kind", "group"),
        default="kind",
        help="a problem's family: its kind, or one-step against trap",
    )
    parser.add_argument(
        "--rm",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="train the reward model in each fold (--no-rm: the checks only)",
    )
    parser.add_argument("--toy", action="store_true", help="one fold, one epoch (CI)")
    args = parser.parse_args()
    study, out = args.study, args.study / "orchrm"
    out.mkdir(exist_ok=True)
    folders = study_runs(study)
    problems = study_problems(study)
    family = {p["id"]: family_of_problem(p, args.family) for p in problems}
    texts = {p["id"]: p["problem"] for p in problems}
    shown = run(["orchrm", "pairs", *(str(f) for fs in folders.values() for f in fs),
                 "--out", str(out / "pairs.jsonl"), "--held-out", "0", "--cheaper",
                 "--cost-tolerance", str(args.cost_tolerance),
                 "--success-margin", str(args.success_margin)])  # fmt: skip
    labels = json.loads(shown.strip().splitlines()[-1])
    pairs = read_pairs(out / "pairs.jsonl")
    by_family = defaultdict(lambda: defaultdict(int))
    for pair in pairs:
        by_family[family[pair["problem_id"]]][f"{pair['chosen_plan']} wins"] += 1

    def family_of(pair: dict) -> str:
        return family[pair["problem_id"]]

    models = {"plan prior": PlanPrior.fit, "plan features": PlanFeatureModel.fit,
              "family x plan": lambda ps: FamilyPlanModel.fit(ps, family_of)}  # fmt: skip
    no_model = {name: leave_one_problem_out(pairs, fit) for name, fit in models.items()}
    for name, result in no_model.items():  # each against the prior, paired by problem
        if name != "plan prior":
            paired = paired_seed_difference(no_model["plan prior"]["scores"], result["scores"])
            result["minus_prior"] = [paired.difference, paired.low, paired.high]
    by_plan = outcomes(folders)
    plans = {p["chosen_plan"]: p["chosen"] for p in pairs} | {
        p["rejected_plan"]: p["rejected"] for p in pairs
    }
    fold_scores: dict[str, list[list[float]]] = defaultdict(list)
    picks: dict[str, list[tuple[float, float]]] = defaultdict(list)
    from tmas.orchrm.reward_model import load_reward_model

    for index, held in enumerate(folds_of(pairs, 1 if args.toy else args.folds)):
        train = [p for p in pairs if p["problem_id"] not in held]
        test = [p for p in pairs if p["problem_id"] in held]
        if not train or not test:
            continue
        fitted = {name: fit(train) for name, fit in models.items()}
        for pid in sorted(held):
            own = [p for p in test if p["problem_id"] == pid]
            for name, model in fitted.items():
                if own:
                    fold_scores[name].append([model.accuracy([p]) for p in own])
        if not args.rm:
            continue
        folder = out / f"fold-{index}"
        folder.mkdir(exist_ok=True)
        run(["orchrm", "train", str(write_pairs(folder / "train.jsonl", train)), "--out",
             str(folder / "rm"), "--eval-pairs", str(write_pairs(folder / "test.jsonl", test)),
             "--epochs", str(1 if args.toy else args.epochs), "--quiet"])  # fmt: skip
        rm = load_reward_model(folder / "rm")
        for pid in sorted(held):
            own = [p for p in test if p["problem_id"] == pid]
            if own:
                fold_scores["reward model"].append([pair_verdict(rm, pair) for pair in own])
        train_ids = [pid for pid in texts if pid not in held and all(
            pid in by_plan[n] for n in plans)]  # fmt: skip
        fixed = max(plans, key=lambda n: mean(by_plan[n][i]["rate"] for i in train_ids))
        ids = [pid for pid in sorted(held) if all(pid in by_plan[n] for n in plans)]
        for name, values in selection(ids, texts, plans, by_plan, rm, fixed).items():
            picks[name.split(" (")[0] if name.startswith("fixed") else name] += values
    report = {
        "study": str(study),
        "labels": labels,
        "pairs_by_family": {k: dict(v) for k, v in sorted(by_family.items())},
        "leave_one_problem_out": no_model,
        "k_fold": {
            name: {
                "accuracy": interval(scores),
                "problems": len(scores),
                "pairs": sum(map(len, scores)),
            }
            for name, scores in fold_scores.items()
        },  # fmt: skip
        "selection": {
            name: {
                "accuracy": interval([[v[0]] for v in values]),
                "tokens": mean(v[1] for v in values),
                "problems": len(values),
            }
            for name, values in picks.items()
        },  # fmt: skip
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
    name = "report.json" if args.rm and args.family == "kind" else f"report-{args.family}.json"
    (out / name).write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
