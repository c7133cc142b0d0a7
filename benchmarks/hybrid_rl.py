"""Hybrid-reward GRPO on SmolLM2-135M that can show learning: base against adapter on held-out
word problems of the training family, with a paired 95% interval.

Training rows are generated arithmetic word problems (``word_problems.py``, seed 1), each shown
through a real TMAS solver prompt of one of the three kinds, built by the code that exports rows
from saved runs: initial (``normal``); exploit (``experience``: an earlier attempt that fell
into the problem's trap, what the verifiers said about it, and lessons that fix the trap);
explore (``guideline``: a bank that forbids counting up one by one, which has a real alternative,
direct arithmetic). The script runs, as a user would:

1. ``tmas train filter``: k completions per row under the training prompt, budget and
   temperature; prints the base pass rate and keeps the rows with reward spread;
2. greedy Pass@1 of the base on the held-out problems (seed 2, initial prompt);
3. ``tmas train grpo`` on the kept rows (novelty judged by the embedded llama.cpp SmolLM2);
4. greedy Pass@1 of the adapter on the same problems, the paired difference with a bootstrap
   95% interval, the reward over the first and last fifth of the steps, per ``_source``;
5. with ``--loop-problems N``: ``tmas eval --graph tmas --backend hf`` with and without the
   adapter on the first N held-out problems (``--loop-only`` runs just this step on the
   adapter an earlier run left in ``--out``).

    python benchmarks/hybrid_rl.py --out /tmp/hybrid_rl [--steps 60] [--eval 100]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from word_problems import ONE_STEP, generate

from tmas.answers.grading import is_correct
from tmas.answers.parsing import extract_answer
from tmas.eval.intervals import paired_difference
from tmas.nodes.prompts import PromptSet
from tmas.storage.run_registry import RunRecord
from tmas.training.data_files import read_rows, write_rows
from tmas.training.rollouts import rollout_row

LESSONS = {
    "add": "Verified: 'buys N more' adds N to what the person had.",
    "subtract": "Verified: 'gives N away' subtracts N from what the person had.",
    "multiply": "Verified: 'k bags with m in each' is k * m in all.",
    "half": "Verified: 'half as many as X' is X / 2.",
    "more_than": "Verified: 'N more than X' is X + N.",
    "more_than_total": "Verified: 'together' adds both people's amounts.",
    "half_total": "Verified: 'together' adds both people's amounts.",
    "packs_minus": "Verified: first multiply packs by items per pack, then subtract.",
}
TRAPS = {  # a wrong answer each kind invites, and what the verifiers said about it
    "add": (lambda a: a - 2, "The attempt subtracted; buying more adds."),
    "subtract": (lambda a: a + 4, "The attempt added; giving away subtracts."),
    "multiply": (lambda a: a + 1, "The attempt added the numbers; it should multiply them."),
    "half": (lambda a: a * 4, "The attempt doubled; half as many divides by two."),
    "more_than": (lambda a: a - 4, "The attempt subtracted; 'more than' adds."),
    "more_than_total": (lambda a: a - 3, "The attempt gave only one person's amount."),
    "half_total": (lambda a: a - 2, "The attempt gave only one person's amount."),
    "packs_minus": (lambda a: a + 2, "The attempt forgot to subtract what was given away."),
}
GUIDELINES = ["Count up one by one from the first amount"]


KINDS_TRAINED = (*ONE_STEP, "more_than_total")


def prompts() -> PromptSet:
    """TMAS's own solver prompts (system and user), unchanged."""
    return PromptSet()


def training_rows(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` rows cycling through the three kinds, with real TMAS solver prompts."""
    rng = random.Random(seed)
    rows = []
    for index, problem in enumerate(generate(count, seed, KINDS_TRAINED)):
        answer, kind = int(problem["answer"]), problem["kind"]
        mode = ("initial", "exploit", "explore")[index % 3]
        task: dict[str, Any] = {
            "problem": problem["problem"],
            "plan": {"iteration": 1 + (mode != "initial"), "index": index, "mode": mode},
        }
        if mode == "exploit":
            wrong, said = TRAPS[kind]
            guess = wrong(answer)
            text = f"I worked it out and got {guess}. \\boxed{{{guess}}}"
            task["parent"] = {"index": 0, "text": text, "answer": str(guess), "summary": said}
            others = rng.sample([k for k in LESSONS if k != kind], 1)
            task["experiences"] = [
                {"id": f"e{i}", "text": LESSONS[k]} for i, k in enumerate([kind, *others])
            ]
        if mode == "explore":
            task["guidelines"] = GUIDELINES
        record = RunRecord(f"synthetic-{seed}", 0.0, problem["problem"], problem["answer"],
                           "tmas", {}, {}, None, "done", None, 0)  # fmt: skip
        rows.append(rollout_row(task, prompts(), record, None))
    return rows


def tmas(*args: str, label: str) -> tuple[float, str]:
    """Run ``tmas ARGS``; its wall time and stdout (exit on failure)."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tmas.cli", *args], text=True,
                          stdout=subprocess.PIPE)  # fmt: skip
    if done.returncode not in (0, 3):  # 3: an evaluation with degraded problems
        sys.exit(f"{label} failed with exit code {done.returncode}")
    return time.monotonic() - started, done.stdout


def greedy_pass(problems: list[dict], adapter: Path | None, max_tokens: int) -> list[bool]:
    """Greedy Pass@1 of each problem under the initial solver prompt (batched generation)."""
    from tmas.llm.hf.model_loading import load_model
    from tmas.training.spread_filter import complete_chats

    loaded = load_model("smollm2", str(adapter) if adapter else None, "cpu")
    system = prompts().render("solver/system")
    right = []
    for start in range(0, len(problems), 16):
        batch = problems[start : start + 16]
        users = [prompts().render("solver/initial", problem=p["problem"]) for p in batch]
        chats = [[{"role": "system", "content": system}, {"role": "user", "content": user}]
                 for user in users]  # fmt: skip
        answers = complete_chats(loaded, chats, 1, 0, max_tokens)
        for problem, (text,) in zip(batch, answers, strict=True):
            right.append(is_correct(extract_answer(text).value, problem["answer"]))
    return right


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def reward_table(metrics: list[dict[str, Any]]) -> None:
    """Mean of every reward series over the first and the last fifth of the steps."""
    lines = [line for line in metrics if "loss" in line]
    fifth = max(1, len(lines) // 5)
    shown = ("reward", "rewards/", "spread/")
    names = sorted({k for line in lines for k in line
                    if k.startswith(shown) and not k.endswith("std")})  # fmt: skip
    print(f"\n{'series (mean per step)':38s} {'first 1/5':>10s} {'last 1/5':>10s}")
    for name in names:
        first = mean([line[name] for line in lines[:fifth] if name in line])
        last = mean([line[name] for line in lines[-fifth:] if name in line])
        shown = [f"{v:10.3f}" if v is not None else f"{'-':>10s}" for v in (first, last)]
        print(f"{name:38s} {shown[0]} {shown[1]}")
    print("\nstep  reward  correct  kl      length  clipped")
    for line in lines[:: max(1, len(lines) // 12)]:
        print(f"{line['step']:4d}  {line.get('reward', 0):6.3f}  "
              f"{line.get('rewards/correctness/mean', 0):7.3f}  {line.get('kl', 0):6.4f}  "
              f"{line.get('completions/mean_length', 0):6.1f}  "
              f"{line.get('completions/clipped_ratio', 0):6.2f}")  # fmt: skip


LOOP = {"n": "2", "m": "1", "t": "2"}


def loop_eval(problems: Path, out: Path, adapter: Path | None, max_tokens: int,
              temperature: float) -> list[bool]:  # fmt: skip
    """``tmas eval --graph tmas --backend hf`` (N=2, M=1, T=2) on ``problems``: the selected
    answer's correctness per problem, in the file's order."""
    command = ["eval", "--data", str(problems), "--out", str(out), "--db", str(out / "runs.sqlite"),
               "--graph", "tmas", "-n", LOOP["n"], "-m", LOOP["m"], "-t", LOOP["t"],
               "--max-tokens", str(max_tokens), "--temperature", str(temperature),
               "--backend", "hf", "--model", "smollm2", "--quiet", "--seed", "7"]  # fmt: skip
    if adapter is not None:
        command += ["--adapter", str(adapter)]
    tmas(*command, label="loop evaluation")
    by_id = {}
    for line in (out / "results.jsonl").open():
        result = json.loads(line)
        by_id[result["id"]] = bool(result["correct"])
    return [by_id[json.loads(line)["id"]] for line in problems.open()]


def loop_comparison(out: Path, held_out: list[dict], count: int, max_tokens: int,
                    temperature: float) -> dict[str, Any]:  # fmt: skip
    """Base against adapter inside the TMAS loop on the first ``count`` held-out problems."""
    subset = out / "loop_problems.jsonl"
    write_rows(held_out[:count], subset)
    started = time.monotonic()
    base = loop_eval(subset, out / "loop_base", None, max_tokens, temperature)
    middle = time.monotonic()
    adapted = loop_eval(subset, out / "loop_adapter", out / "train", max_tokens, temperature)
    paired = paired_difference(base, adapted)
    return {
        "problems": count, "settings": {**LOOP, "temperature": temperature,
                                        "max_tokens": max_tokens},
        "base": mean(base), "adapter": mean(adapted), "difference": paired.difference,
        "interval95": [paired.low, paired.high],
        "wall_s": {"base": round(middle - started), "adapter": round(time.monotonic() - middle)},
    }  # fmt: skip


def report_of(held_out: list[dict], base: list[bool], adapted: list[bool], spread: dict,
              kept: list[dict], walls: dict[str, float]) -> dict[str, Any]:  # fmt: skip
    """The figures of one run: the base pass rate under the training prompt, the rows kept,
    greedy Pass@1 of base and adapter, their paired difference, by kind, and the wall times."""
    paired = paired_difference(base, adapted)

    def by_kind(scores: list[bool], kind: str) -> float | None:
        return mean([s for s, p in zip(scores, held_out, strict=True) if p["kind"] == kind])

    return {
        "base_pass_rate_training_rows": spread.get("pass_rate"), "filter": spread,
        "kept_by_source": {s: sum(r["_source"] == s for r in kept)
                           for s in ("normal", "experience", "guideline")},
        "held_out": len(held_out), "base_greedy": mean(base), "adapter_greedy": mean(adapted),
        "difference": paired.difference, "interval95": [paired.low, paired.high],
        "by_kind": {k: [by_kind(base, k), by_kind(adapted, k)] for k in KINDS_TRAINED},
        "wall_s": {name: round(seconds) for name, seconds in walls.items()},
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--train", type=int, default=48, help="training rows before filtering")
    parser.add_argument("--eval", type=int, default=100, help="held-out problems")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--max-completion-length", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=0.3)
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--loop-problems", type=int, default=0)
    parser.add_argument(
        "--loop-only",
        action="store_true",
        help="only the TMAS-loop comparison, with the adapter of an earlier run in --out",
    )
    parser.add_argument(
        "--filter",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep only rows with reward spread (tmas train filter)",
    )
    args = parser.parse_args()
    if args.loop_only and args.loop_problems < 1:
        parser.error("--loop-only needs --loop-problems N (N >= 1)")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.loop_only:
        held_out = [json.loads(line) for line in (out / "held_out.jsonl").open()]
        report = json.loads((out / "report.json").read_text())
        report["loop"] = loop_comparison(out, held_out, args.loop_problems,
                                         args.max_completion_length, args.temperature)  # fmt: skip
        print(json.dumps(report["loop"], indent=1))
        (out / "report.json").write_text(json.dumps(report, indent=1))
        return
    started = time.monotonic()
    write_rows(training_rows(args.train, seed=1), out / "rows.parquet")
    held_out = generate(args.eval, seed=2, kinds=KINDS_TRAINED)
    write_rows(held_out, out / "held_out.jsonl")
    budget = ["--max-completion-length", str(args.max_completion_length),
              "--temperature", str(args.temperature)]  # fmt: skip
    spread, filter_s = {}, 0.0
    if args.filter:
        filter_s, shown = tmas("train", "filter", str(out / "rows.parquet"), "--out",
                               str(out / "kept.parquet"), "-k", str(args.generations), *budget,
                               label="filter")  # fmt: skip
        spread = json.loads(shown.strip().splitlines()[-1])
    else:  # every row, spread or not (to compare with dynamic sampling)
        write_rows(read_rows(out / "rows.parquet"), out / "kept.parquet")
    t0 = time.monotonic()
    base = greedy_pass(held_out, None, args.max_completion_length)
    base_s = time.monotonic() - t0
    train_s, _ = tmas("train", "grpo", str(out / "kept.parquet"), "--out", str(out / "train"),
                      "--steps", str(args.steps), "--generations", str(args.generations), *budget,
                      "--learning-rate", str(args.learning_rate), "--judge-backend", "llamacpp",
                      "--judge-model", "smollm2", "--save-every", "10", "--quiet",
                      label="training")  # fmt: skip
    t0 = time.monotonic()
    adapted = greedy_pass(held_out, out / "train", args.max_completion_length)
    adapter_s = time.monotonic() - t0
    metrics = [json.loads(line) for line in (out / "train" / "metrics.jsonl").open()]
    walls = {"filter": filter_s, "base_eval": base_s, "train": train_s, "adapter_eval": adapter_s,
             "total": time.monotonic() - started}  # fmt: skip
    report = report_of(held_out, base, adapted, spread, read_rows(out / "kept.parquet"), walls)
    paired = zip(held_out, base, adapted, strict=True)
    results = [{**p, "base": b, "adapter": a} for p, b, a in paired]
    write_rows(results, out / "held_out_results.jsonl")
    if args.loop_problems:
        report["loop"] = loop_comparison(out, held_out, args.loop_problems,
                                         args.max_completion_length, args.temperature)  # fmt: skip
    print(f"\nhybrid-reward GRPO, SmolLM2-135M, {args.steps} steps x {args.generations} "
          "generations")  # fmt: skip
    reward_table(metrics)
    print("\n" + json.dumps(report, indent=1))
    (out / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
