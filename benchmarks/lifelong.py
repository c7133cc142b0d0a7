"""Lifelong memory that can tell: the same problems in the same order, memory off and on, at the
same seed and budget (N, M, T and token limits), with the embedded model.

By default the problems are generated word problems that share four traps a lesson can fix
(``trap_problems.py``, ``--traps hard``: gaps, not items, in cutting a log or a clock's
strikes; flights, not floor numbers, on stairs; inclusive counting; time across noon), two
shapes per trap, in a fixed order. ``--traps easy`` is the family the base model mostly
solves ("half as many ... together", "N more than ... together", unit changes, inclusive
counting); ``--data gsm8k`` takes the first
problems of ``../shared/data/gsm8k_test_dev.jsonl`` instead. The script runs, as a user would,
``tmas eval`` twice: once plain, once with ``--memory`` and ``--concurrency 1`` (one problem
after another, in the file's order; ``--off-concurrency`` lets the plain run, where order does
not matter, batch several problems). It prints accuracy over the whole sequence, its first and
second half (memory can only help once something is in it) and per trap; the paired difference
(memory on minus off, same problems) with a bootstrap 95% interval, over all problems and over
the second half; tokens per problem; how many remembered lessons each problem's prompts showed
(not how many the memory seeded its banks with); and what the memory held at the end.
``report.json`` in ``--out`` keeps every figure.

    python benchmarks/lifelong.py [--problems 40] [--out DIR] [--model qwen] [--traps hard] [--toy]

With ``--study OUT --data-file PROBLEMS`` it reads a finished lifelong study instead
(``studies/lifelong.yaml``): each arm's right answers by kind, the remembered items each
problem's prompts showed, and on how many problems the imported lesson of the problem's own
trap reached a prompt.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from statistics import mean
from typing import Any

from trap_problems import EASY_TRAPS, HARD_TRAPS, generate

from tmas.eval.data import load_problems
from tmas.eval.intervals import paired_difference
from tmas.lifecycle.history import latest_run_states
from tmas.lifecycle.memory_runs import memory_id
from tmas.memory.banks import remembered_items
from tmas.memory.lifelong import LifelongMemory
from tmas.storage import open_storage

GSM8K = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k_test_dev.jsonl"
MEMORY = "lifelong-benchmark"
TOY_TOKENS = 16
TOY_BUDGETS = [f"--set={role}_max_tokens={TOY_TOKENS}"
               for role in ("verifier", "summary", "experience", "guideline")]  # fmt: skip


def write_problems(args: argparse.Namespace, path: Path) -> list[dict[str, Any]]:
    """The problems of the run, in order, written where ``tmas eval`` reads them."""
    if args.data == "traps":
        traps = HARD_TRAPS if args.traps == "hard" else EASY_TRAPS
        rows = generate(args.problems, seed=args.problem_seed, traps=traps)
    else:
        source = str(GSM8K) if GSM8K.exists() else "gsm8k"
        rows = [p.model_dump() for p in load_problems(source, args.problems)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows


def evaluate(data: Path, out: Path, db: Path, args: argparse.Namespace, memory: bool) -> Path:
    """One in-order evaluation (resumable: a rerun finishes what is missing)."""
    folder = out / ("memory-on" if memory else "memory-off")
    command = [
        sys.executable, "-m", "tmas.cli", "eval", "--data", str(data), "--out", str(folder),
        "--graph", "tmas",
        "--model", args.model, "--concurrency", "1" if memory else str(args.off_concurrency),
        "--db", str(db), "--quiet",
        "-n", str(args.n), "-m", str(args.m), "-t", str(args.t), "--seed", str(args.seed),
        "--max-tokens", str(args.max_tokens),
    ]  # fmt: skip
    if args.threads:
        command += ["--threads", str(args.threads)]
    if args.toy:
        command += TOY_BUDGETS
    if memory:
        command += ["--memory", MEMORY]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}")
    return folder


def rows_in_order(folder: Path, problems: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The evaluation's result rows in the problems' order."""
    lines = (folder / "results.jsonl").read_text().splitlines()
    by_id = {row["id"]: row for row in map(json.loads, filter(str.strip, lines))}
    return [by_id[str(problem["id"])] for problem in problems]


def lessons_shown(db: Path, rows: list[dict[str, Any]]) -> list[int]:
    """How many remembered lessons each run's prompts showed (:func:`shown_lessons`)."""
    storage = open_storage(db)
    try:
        return [len(shown_lessons(storage, row["run_id"])) for row in rows]
    finally:
        storage.close()


def shown_lessons(storage: Any, run_id: str) -> set[str]:
    """The remembered items (lessons from the memory) that a solver prompt of run ``run_id``
    showed, in any iteration: those among the experiences its candidates were given. A prompt
    shows at most ``experiences_per_prompt`` items of its bank, however many the memory seeded
    the bank with."""
    remembered: set[str] = set()
    given: set[str] = set()
    for state in latest_run_states(storage.checkpointer, run_id):
        remembered.update(item["id"] for item in remembered_items(state))
        for candidate in state.get("candidates") or []:
            given.update(candidate.get("experience_ids") or [])
    return given & remembered


def study_arm(study: Path, condition: str, kinds: dict[str, str], seed: int = 0) -> dict[str, Any]:
    """One arm of a lifelong study (``tmas study``'s ``OUT/conditions/NAME/seed-S``): right
    and problems by kind, the remembered items each problem's prompts showed, and on how many
    problems they showed the imported lesson of the problem's own kind (``lesson-KIND``)."""
    lines = (study / "conditions" / condition / f"seed-{seed}" / "results.jsonl").read_text()
    rows = [json.loads(line) for line in filter(str.strip, lines.splitlines())]
    storage = open_storage(study / "runs.sqlite")
    try:
        shown = {row["id"]: shown_lessons(storage, row["run_id"]) for row in rows}
    finally:
        storage.close()
    own = {
        row["id"]: f"lesson-{kinds.get(row['id'])}" in {memory_id(i) for i in shown[row["id"]]}
        for row in rows
    }
    by_kind: dict[str, list[int]] = {}
    for row in rows:
        tally = by_kind.setdefault(kinds.get(row["id"], "?"), [0, 0])
        tally[0] += bool(row["correct"])
        tally[1] += 1
    return {
        "problems": len(rows),
        "right_of_kind": by_kind,
        "remembered_shown": [len(shown[row["id"]]) for row in rows],
        "own_lesson_shown": sum(own.values()),
        "right_with_own_lesson": sum(own[r["id"]] and bool(r["correct"]) for r in rows),
    }


def report_study(study: Path, problems: Path) -> None:
    """Print :func:`study_arm` for every arm of the study at ``study`` (kinds from
    ``problems``, the study's problem file)."""
    kinds = {problem.id: problem.kind or "?" for problem in load_problems(str(problems))}
    for folder in sorted((study / "conditions").glob("*/seed-*")):
        seed = int(folder.name.removeprefix("seed-"))
        figures = study_arm(study, folder.parent.name, kinds, seed)
        print(f"{folder.parent.name} seed {seed}: {json.dumps(figures)}")


def memory_items(db: Path) -> list[dict[str, Any]]:
    storage = open_storage(db)
    try:
        return LifelongMemory(storage.store(), MEMORY).items()
    finally:
        storage.close()


def accuracy(rows: list[dict[str, Any]]) -> float | None:
    return mean(float(r["correct"]) for r in rows) if rows else None


def figures(problems: list[dict], off: list[dict], on: list[dict]) -> dict[str, Any]:
    """Accuracies by position and trap, paired differences with intervals, tokens."""
    half = len(problems) // 2
    right_off, right_on = [bool(r["correct"]) for r in off], [bool(r["correct"]) for r in on]
    overall, second = (
        paired_difference(right_off, right_on),
        paired_difference(right_off[half:], right_on[half:]),
    )
    traps = sorted({p.get("trap") or "gsm8k" for p in problems})

    def trap_rows(rows: list[dict], trap: str) -> list[dict]:
        return [
            r for r, p in zip(rows, problems, strict=True) if (p.get("trap") or "gsm8k") == trap
        ]

    return {
        "problems": len(problems),
        "accuracy": {
            name: {
                "all": accuracy(rows),
                "first_half": accuracy(rows[:half]),
                "second_half": accuracy(rows[half:]),
            }
            for name, rows in (("off", off), ("on", on))
        },  # fmt: skip
        "by_trap": {t: [accuracy(trap_rows(off, t)), accuracy(trap_rows(on, t))] for t in traps},
        "difference": {
            "all": [overall.difference, overall.low, overall.high],
            "second_half": [second.difference, second.low, second.high],
        },  # fmt: skip
        "tokens_per_problem": {
            name: mean(r["tokens_in"] + r["tokens_out"] for r in rows)
            for name, rows in (("off", off), ("on", on))
        },  # fmt: skip
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=40)
    parser.add_argument("--data", choices=("traps", "gsm8k"), default="traps")
    parser.add_argument(
        "--traps",
        choices=("easy", "hard"),
        default="hard",
        help="which trap family (trap_problems.EASY_TRAPS or HARD_TRAPS)",
    )
    parser.add_argument("--problem-seed", type=int, default=3, help="which trap problems")
    parser.add_argument(
        "--out", type=Path, help="where the runs go (default: lifelong-benchmark; --toy: a "
        "temporary folder removed at the end)"
    )  # fmt: skip
    parser.add_argument("--model", default="qwen")
    parser.add_argument("--seed", type=int, default=0, help="the runs' seed, the same off and on")
    parser.add_argument("-n", type=int, default=2)
    parser.add_argument("-m", type=int, default=1)
    parser.add_argument("-t", type=int, default=1)
    parser.add_argument(
        "--off-concurrency",
        type=int,
        default=1,
        help="problems at a time without memory (order matters only with it)",
    )
    parser.add_argument("--threads", type=int, help="CPU threads of the embedded model")
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument(
        "--study",
        type=Path,
        help="instead of running: read a lifelong study's folder (tmas study) and print each "
        "arm's figures by kind and the lessons its prompts showed; --data-file names its problems",
    )
    parser.add_argument("--data-file", type=Path, help="the study's problems (with --study)")
    parser.add_argument(
        "--toy",
        action="store_true",
        help=f"toy size, for CI: 2 trap problems, smollm2, N=1 M=1 T=1, {TOY_TOKENS}-token "
        "answers for every role, one thread",
    )
    args = parser.parse_args()
    if args.study is not None:
        if args.data_file is None:
            parser.error("--study needs --data-file, the study's problems")
        report_study(args.study, args.data_file)
        return
    if args.toy:
        args.data, args.problems, args.model, args.threads = "traps", 2, "smollm2", 1
        args.n, args.m, args.t, args.max_tokens = 1, 1, 1, TOY_TOKENS
    with ExitStack() as stack:
        if args.out is None and args.toy:
            args.out = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        args.out = args.out or Path("lifelong-benchmark")
        memory_off_and_on(args)


def memory_off_and_on(args: argparse.Namespace) -> None:
    """Both evaluations, memory off then on, and their report (printed and in
    ``report.json``)."""
    args.out.mkdir(parents=True, exist_ok=True)
    data = args.out / "problems.jsonl"
    problems = write_problems(args, data)
    db = args.out / "runs.sqlite"
    walls, results = {}, {}
    for memory in (False, True):
        started = time.monotonic()
        results[memory] = rows_in_order(evaluate(data, args.out, db, args, memory), problems)
        walls["on" if memory else "off"] = round(time.monotonic() - started)
    report = figures(problems, results[False], results[True])
    shown = lessons_shown(db, results[True])
    kept = memory_items(db)
    report.update(settings=vars(args) | {"out": str(args.out)}, wall_s=walls,
                  lessons_shown=shown,
                  memory=[{"type": i.get("type"), "hits": i["hits"], "uses": i["uses"],
                           "text": i["text"]} for i in kept])  # fmt: skip
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    print(
        f"{len(problems)} {args.data} problems in order, tmas N={args.n} M={args.m} "
        f"T={args.t}, {args.max_tokens}-token answers, model {args.model}, seed {args.seed}"
    )
    for name, values in report["accuracy"].items():
        print(f"memory {name:<3}: " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in values.items()))
    for part, (diff, low, high) in report["difference"].items():
        print(f"on - off ({part}): {100 * diff:+.1f} points, 95% interval "
              f"[{100 * low:+.1f}, {100 * high:+.1f}]")  # fmt: skip
    print(f"by trap (off, on): {json.dumps(report['by_trap'])}")
    print(f"lessons shown per problem: {shown}; items in memory at the end: {len(kept)}")
    print(f"wall time: {walls}")


if __name__ == "__main__":
    main()
