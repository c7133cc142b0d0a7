"""TMAS vs majority vote vs PaCoRe at (about) equal token budget, on the embedded model.

TMAS runs first; its mean tokens per problem set the budget. Majority vote then samples as
many answers as that budget buys at TMAS's mean solver tokens per call; PaCoRe runs two
rounds of the same width (the last round one sample). Every system runs as an evaluation
(one saved run per problem), so an interrupted benchmark finishes when run again.

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


def evaluate(name: str, config: TMASConfig, args: argparse.Namespace, problems: list) -> dict:
    backend = BackendSpec(kind="llamacpp", model=args.model).resolved()
    evaluation = Evaluation(
        problems=problems,
        spec=load_bundled(name),
        config=config,
        backend=backend,
        router=make_router(backend, config),
        db=args.out / "runs.sqlite",
        out_dir=args.out / name,
    )
    started = time.monotonic()
    summary = evaluation.run()
    summary["wall_s"] = time.monotonic() - started
    rows = [
        json.loads(line) for line in (args.out / name / "results.jsonl").read_text().splitlines()
    ]
    solver_calls = sum(r["usage"].get("solver", {}).get("calls", 0) for r in rows)
    solver_out = sum(r["usage"].get("solver", {}).get("output_tokens", 0) for r in rows)
    solver_in = sum(r["usage"].get("solver", {}).get("input_tokens", 0) for r in rows)
    summary["tokens_per_solver_call"] = (solver_out + solver_in) / max(solver_calls, 1)
    return summary


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
    pacore_width = max(1, (width - 1) // 2)
    pacore = evaluate(
        "pacore", TMASConfig(n_candidates=pacore_width, max_iterations=3, **base), args, problems
    )
    print(
        f"{len(problems)} problems from {args.data}; model {args.model or 'default'}; "
        f"{os.cpu_count()} cores; {platform.python_version()}"
    )
    print(
        f"{'system':<16} {'size':<14} {'accuracy':>9} {'Pass@1 last':>12} {'tokens':>9} "
        f"{'calls':>6} {'minutes':>8}"
    )
    sizes = {
        "tmas": f"N=4 M=2 T={args.iterations}",
        "majority_vote": f"N={width}",
        "pacore": f"N={pacore_width} x3 rounds",
    }
    for name, summary in (("tmas", tmas), ("majority_vote", mv), ("pacore", pacore)):
        curve = summary["pass_at_1_per_iteration"]
        print(
            f"{name:<16} {sizes[name]:<14} {100 * (summary['accuracy'] or 0):>8.1f}% "
            f"{100 * (curve[-1] or 0) if curve else 0:>11.1f}% {summary['mean_tokens']:>9,.0f} "
            f"{summary['mean_llm_calls']:>6.1f} {summary['wall_s'] / 60:>8.1f}"
        )


if __name__ == "__main__":
    main()
