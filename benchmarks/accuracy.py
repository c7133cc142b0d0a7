"""TMAS vs majority vote vs PaCoRe at (about) equal token budget, on the embedded model.

TMAS runs first; its mean tokens per problem set the budget. Majority vote then samples as
many answers as that budget buys at TMAS's mean solver tokens per call. PaCoRe runs three
rounds (the last one sample); each sample after the first round reads every solution of the
round before, so its width is the largest whose estimated tokens (from majority vote's
measured tokens per sample and per answer) stay within the budget. Every system runs as an
evaluation (one saved run per problem, in a folder named by its size), so an interrupted
benchmark finishes when run again. Accuracy counts a failed problem as wrong.

    python benchmarks/accuracy.py --limit 3 [--data ../shared/data/gsm8k_test_dev.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

from tmas.config import TMASConfig
from tmas.eval.data import load_problems
from tmas.eval.runner import Evaluation
from tmas.graphs.bundled import load_bundled
from tmas.llm.backend import BackendSpec, make_router

DEFAULT_DATA = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gsm8k_test_dev.jsonl"
)


def evaluate(
    name: str, config: TMASConfig, args: argparse.Namespace, problems: list, folder: str = ""
) -> dict:
    backend = BackendSpec(kind="llamacpp", model=args.model).resolved()
    out_dir = args.out / (folder or name)
    evaluation = Evaluation(
        problems=problems,
        spec=load_bundled(name),
        config=config,
        backend=backend,
        router=make_router(backend, config),
        db=args.out / "runs.sqlite",
        out_dir=out_dir,
    )
    started = time.monotonic()
    summary = evaluation.run()
    summary["wall_s"] = time.monotonic() - started
    rows = [json.loads(line) for line in (out_dir / "results.jsonl").read_text().splitlines()]
    solver_calls = sum(r["usage"].get("solver", {}).get("calls", 0) for r in rows)
    solver_out = sum(r["usage"].get("solver", {}).get("output_tokens", 0) for r in rows)
    solver_in = sum(r["usage"].get("solver", {}).get("input_tokens", 0) for r in rows)
    summary["tokens_per_solver_call"] = (solver_out + solver_in) / max(solver_calls, 1)
    summary["output_tokens_per_solver_call"] = solver_out / max(solver_calls, 1)
    summary["accuracy_all"] = sum(bool(r["correct"]) for r in rows) / max(len(rows), 1)
    summary["minutes_per_problem"] = sum(r["wall_s"] or 0 for r in rows) / max(len(rows), 1) / 60
    return summary


def pacore_width(budget: float, per_sample: float, per_answer: float) -> int:
    """The widest PaCoRe (w samples, then w samples reading w answers each, then one sample
    reading w answers) whose estimated tokens stay within ``budget``.

    Example:
        >>> pacore_width(20_000, 400, 300)
        6
    """

    def estimate(width: int) -> float:
        return width * per_sample + (width + 1) * (per_sample + width * per_answer)

    width = 1
    while estimate(width + 1) <= budget:
        width += 1
    return width


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--limit", type=int, default=3)
    parser.add_argument("--model", default=None, help="qwen (default when installed), smollm2")
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/accuracy"))
    args = parser.parse_args()
    problems = load_problems(args.data, args.limit)
    base = dict(max_retries=0, seed=0)
    tmas = evaluate(
        "tmas",
        TMASConfig(n_candidates=4, n_verifications=2, max_iterations=args.iterations, **base),
        args,
        problems,
    )
    width = max(1, round(tmas["mean_tokens"] / tmas["tokens_per_solver_call"]))
    mv = evaluate(
        "majority_vote", TMASConfig(n_candidates=width, max_iterations=1, **base), args, problems
    )
    pacore_n = pacore_width(
        tmas["mean_tokens"], mv["tokens_per_solver_call"], mv["output_tokens_per_solver_call"]
    )
    pacore = evaluate(
        "pacore",
        TMASConfig(n_candidates=pacore_n, max_iterations=3, **base),
        args,
        problems,
        folder=f"pacore-n{pacore_n}",
    )
    print(
        f"{len(problems)} problems from {args.data}; model {args.model or 'default'}; "
        f"{os.cpu_count()} cores; {platform.python_version()}"
    )
    print(
        f"{'system':<16} {'size':<14} {'accuracy':>9} {'Pass@1 last':>12} {'tokens':>9} "
        f"{'calls':>6} {'min/prob':>8} {'failed':>6}"
    )
    sizes = {
        "tmas": f"N=4 M=2 T={args.iterations}",
        "majority_vote": f"N={width}",
        "pacore": f"N={pacore_n},{pacore_n},1",
    }
    for name, summary in (("tmas", tmas), ("majority_vote", mv), ("pacore", pacore)):
        curve = summary["pass_at_1_per_iteration"]
        print(
            f"{name:<16} {sizes[name]:<14} {100 * summary['accuracy_all']:>8.1f}% "
            f"{100 * (curve[-1] or 0) if curve else 0:>11.1f}% {summary['mean_tokens']:>9,.0f} "
            f"{summary['mean_llm_calls']:>6.1f} {summary['minutes_per_problem']:>8.1f} "
            f"{summary['failed']:>6}"
        )


if __name__ == "__main__":
    main()
