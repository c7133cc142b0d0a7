"""The data of the hybrid-reward GRPO study (``studies/hybrid_grpo.yaml``): training rows in
which the hybrid reward's extra terms can pay, held-out problems, and rollouts for a
rejection-sampling warm start.

Training rows are generated arithmetic word problems (``word_problems.py``, seed 1), each shown
through a real TMAS solver prompt built by the code that exports rows from saved runs. Problem
kinds are crossed with prompt kinds (each kind of problem appears under every prompt):

- initial (``normal``): the problem alone;
- exploit (``experience``): an earlier attempt that is a real wrong answer of the base model
  on that problem (the most frequent wrong answer of ``--samples`` draws at temperature 0.7;
  a problem the base never got wrong stays an initial row), the verifiers' remark that it was
  wrong, and lessons, the one for the problem's kind first. The repair term then ranks a copy
  of that answer below a fix;
- explore (``guideline``): a bank that says the usual strategy, one equation computed in one
  step, was already used. Working it out in words, counting, or checking with the inverse
  operation are real alternatives, so a novelty judge can say yes.

Each row names its problem kind (``extra_info.kind``), so a study leaves out held-out problems
of the same kind with the same numbers. Rollouts for the warm start are the solver's own:
``tmas eval --graph majority_vote`` with the embedded SmolLM2 on other problems (seed 4; 16
candidates of at most 192 tokens at temperature 0.3), exported with
``tmas export rollouts`` (``tmas train sft`` keeps the verified-correct ones).

    python benchmarks/hybrid_rl.py --out studies/data [--train 48] [--eval 600] [--rft 48]
    python benchmarks/hybrid_rl.py --out studies/data --only rft     # the warm start's rows
    python benchmarks/hybrid_rl.py --toy [--out DIR]

Writes ``hybrid_rows.jsonl``, ``hybrid_eval.jsonl`` and ``rft_rows.jsonl`` in ``--out`` (with
``--toy`` and no ``--out``, in a temporary folder removed at the end).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from word_problems import ONE_STEP, generate

from tmas.answers.grading import is_correct
from tmas.answers.parsing import extract_answer
from tmas.nodes.prompts import PromptSet
from tmas.storage.run_registry import RunRecord
from tmas.training.rollouts import rollout_row

LESSONS = {
    "add": "Verified: 'buys N more' adds N to what the person had.",
    "subtract": "Verified: 'gives N away' subtracts N from what the person had.",
    "multiply": "Verified: 'k bags with m in each' is k * m in all.",
    "half": "Verified: 'half as many as X' is X / 2.",
    "more_than": "Verified: 'N more than X' is X + N.",
    "more_than_total": "Verified: 'together' adds both people's amounts.",
}
KINDS_TRAINED = (*ONE_STEP, "more_than_total")
MODES = ("initial", "exploit", "explore")
GUIDELINES = ["Write one equation with the numbers of the problem and compute it in one step"]
REMARK = "The verifiers checked this attempt and found its final answer wrong."
RFT_GRAPH = "majority_vote"  # every call a solver rollout (the tmas graph spends 4 in 5 on others)
RFT_SIZES = ("-n", "16", "--max-tokens", "192")
RFT_TEMPERATURE = "0.3"  # at 0.7 SmolLM2-135M verified 6 of 112 rollouts: too few to learn from
TOY_TOKENS = 8
TOY_RFT_SIZES = ("-n", "1", "--max-tokens", str(TOY_TOKENS))


def tmas(*args: str, label: str) -> tuple[float, str]:
    """Run ``tmas ARGS``; its wall time and stdout (exit on failure)."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tmas.cli", *args], text=True,
                          stdout=subprocess.PIPE)  # fmt: skip
    if done.returncode not in (0, 3):  # 3: an evaluation with degraded problems
        sys.exit(f"{label} failed with exit code {done.returncode}")
    return time.monotonic() - started, done.stdout


def crossed_mode(index: int, kinds: int) -> str:
    """The prompt kind of row ``index`` when problem kinds cycle with period ``kinds``: a
    whole cycle of problem kinds under one prompt kind, then the next, so every problem kind
    meets every prompt kind.

    >>> [crossed_mode(i, 2) for i in range(6)]
    ['initial', 'initial', 'exploit', 'exploit', 'explore', 'explore']
    """
    return MODES[(index // kinds) % len(MODES)]


def common_wrong(texts: list[str], gold: str) -> tuple[str, str] | None:
    """The most frequent wrong numeric answer among ``texts`` and the first text giving it
    (a reply whose extracted answer holds no digit is a failure to answer, not an attempt to
    repair).

    >>> common_wrong(["\\\\boxed{3}", "so \\\\boxed{5}", "\\\\boxed{5}", "\\\\boxed{is}"], "3")
    ('5', 'so \\\\boxed{5}')
    """
    wrong: dict[str, list[str]] = {}
    for text in texts:
        answer = extract_answer(text).value
        if answer and any(c.isdigit() for c in answer) and not is_correct(answer, gold):
            wrong.setdefault(answer, []).append(text)
    if not wrong:
        return None
    answer = Counter({a: len(t) for a, t in wrong.items()}).most_common(1)[0][0]
    return answer, wrong[answer][0]


def base_attempts(
    problems: list[dict], samples: int, tokens: int = 128, threads: int | None = None
) -> list[list[str]]:
    """``samples`` answers of the base SmolLM2 (transformers, temperature 0.7, ``tokens``
    tokens, torch's default threads unless ``threads``) to each problem under TMAS's initial
    solver prompt."""
    import torch

    from tmas.llm.hf.model_loading import load_model
    from tmas.training.spread_filter import complete_chats

    if threads:
        torch.set_num_threads(threads)
    loaded = load_model("smollm2", None, "cpu")
    torch.manual_seed(0)
    prompts = PromptSet()
    chats = [[{"role": "system", "content": prompts.render("solver/system")},
              {"role": "user", "content": prompts.render("solver/initial", problem=p["problem"])}]
             for p in problems]  # fmt: skip
    found: list[list[str]] = []
    for start in range(0, len(chats), 8):
        found += complete_chats(loaded, chats[start : start + 8], samples, 0.7, tokens)
    return found


def training_rows(
    count: int, seed: int, samples: int, tokens: int = 128, threads: int | None = None
) -> tuple[list[dict], Counter]:
    """``count`` rows, problem kinds crossed with prompt kinds; how many of each were made
    (base attempts of ``tokens`` tokens on ``threads`` threads)."""
    problems = generate(count, seed, KINDS_TRAINED)
    modes = [crossed_mode(i, len(KINDS_TRAINED)) for i in range(len(problems))]
    exploit = [p for p, mode in zip(problems, modes, strict=True) if mode == "exploit"]
    drawn = base_attempts(exploit, samples, tokens, threads)
    attempts = dict(zip((p["id"] for p in exploit), drawn, strict=True))
    rows, made = [], Counter()
    for index, (problem, mode) in enumerate(zip(problems, modes, strict=True)):
        kind = problem["kind"]
        plan = {"iteration": 1, "index": index, "mode": "initial"}
        task: dict[str, Any] = {"problem": problem["problem"], "plan": plan}
        wrong = common_wrong(attempts.get(problem["id"], []), problem["answer"])
        if mode == "exploit" and wrong is not None:
            answer, text = wrong
            task["plan"] = {"iteration": 2, "index": index, "mode": "exploit"}
            task["parent"] = {"index": 0, "text": text, "answer": answer, "summary": REMARK}
            others = [k for k in LESSONS if k != kind][index % (len(LESSONS) - 1)]
            task["experiences"] = [{"id": f"e{i}", "text": LESSONS[k]}
                                   for i, k in enumerate([kind, others])]  # fmt: skip
        elif mode == "explore":
            task["plan"] = {"iteration": 2, "index": index, "mode": "explore"}
            task["guidelines"] = GUIDELINES
        record = RunRecord(f"generated-{seed}", 0.0, problem["problem"], problem["answer"],
                           "tmas", {}, {}, None, "done", None, 0)  # fmt: skip
        row = rollout_row(task, PromptSet(), record, None)
        row["extra_info"]["kind"] = kind
        rows.append(row)
        made[task["plan"]["mode"]] += 1
    return rows, made


def rft_rows(out: Path, count: int, threads: int | None, sizes: tuple[str, ...] = RFT_SIZES) -> int:
    """TMAS runs of the embedded SmolLM2 on ``count`` other problems (``tmas eval`` options
    ``sizes``: N, M, T and answer budgets), exported as rows."""
    problems = generate(count, seed=4, kinds=KINDS_TRAINED)
    with tempfile.TemporaryDirectory() as work:
        data = Path(work) / "problems.jsonl"
        data.write_text("".join(json.dumps(p) + "\n" for p in problems))
        db = str(Path(work) / "runs.sqlite")
        tmas("eval", "--data", str(data), "--out", f"{work}/eval", "--db", db, "--graph", RFT_GRAPH,
             *sizes, "--model", "smollm2", "--temperature", RFT_TEMPERATURE, "--seed", "4",
             "--quiet",
             *(["--threads", str(threads)] if threads else []), label="TMAS runs")  # fmt: skip
        tmas("export", "rollouts", f"{work}/eval", "--db", db, "--out",
             str(out / "rft_rows.jsonl"), label="export")  # fmt: skip
    return len((out / "rft_rows.jsonl").read_text().splitlines())


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="where the files go (required without --toy)")
    parser.add_argument("--train", type=int, default=48, help="training rows")
    parser.add_argument("--eval", type=int, default=600, help="held-out problems (before dedupe)")
    parser.add_argument("--rft", type=int, default=48, help="problems of the warm start's runs")
    parser.add_argument("--samples", type=int, default=8, help="base draws per exploit row")
    parser.add_argument(
        "--only",
        choices=("held_out", "rft"),
        help="write only hybrid_eval.jsonl or rft_rows.jsonl (the other files stay)",
    )
    parser.add_argument("--threads", type=int, help="CPU threads of the embedded model")
    parser.add_argument(
        "--toy",
        action="store_true",
        help=f"toy size, for CI: {2 * len(KINDS_TRAINED) + 1} training rows (every prompt "
        f"kind), one base draw per exploit row, 2 held-out problems, the warm start's runs on "
        f"one problem with one candidate, {TOY_TOKENS}-token answers, one thread for each model",
    )
    args = parser.parse_args()
    tokens, sizes, torch_threads = 128, RFT_SIZES, None
    if args.toy:
        args.train, args.eval, args.rft = 2 * len(KINDS_TRAINED) + 1, 2, 1
        args.samples, args.threads = 1, 1
        tokens, sizes, torch_threads = TOY_TOKENS, TOY_RFT_SIZES, 1
    elif args.out is None:
        parser.error("--out is required (without --toy)")
    with ExitStack() as stack:
        out = args.out or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        out.mkdir(parents=True, exist_ok=True)
        if args.only == "rft":
            print(json.dumps({"rft_rows": rft_rows(out, args.rft, args.threads, sizes)}))
            return
        held = [{k: p[k] for k in ("id", "problem", "answer", "kind")}
                for p in generate(args.eval, seed=2, kinds=KINDS_TRAINED)]  # fmt: skip
        write_jsonl(out / "hybrid_eval.jsonl", held)  # the first n are the same for any --eval
        if args.only == "held_out":
            print(json.dumps({"held_out": len(held)}))
            return
        rows, made = training_rows(
            args.train, seed=1, samples=args.samples, tokens=tokens, threads=torch_threads
        )
        write_jsonl(out / "hybrid_rows.jsonl", rows)
        exported = rft_rows(out, args.rft, args.threads, sizes) if args.rft else 0
    print(json.dumps({"rows": dict(made), "held_out": len(held), "rft_rows": exported}))


if __name__ == "__main__":
    main()
