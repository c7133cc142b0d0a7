"""TMAS against its baselines at (about) equal token budget, on the embedded model.

TMAS runs first; its mean tokens per problem set the budget. Majority vote then samples as
many answers as that budget buys at TMAS's mean solver tokens per call. PaCoRe runs the round
widths [w, w, 1]; each sample after the first round reads every solution of the round before,
so w is the largest whose estimated tokens (from majority vote's measured tokens per sample and
per answer) stay within the budget. RSA (3 rounds, each member aggregating 2), self-refine and
verify-refine (2 rounds, M=2) get the widest size whose model calls per role, counted by a dry
run on the scripted model, cost at most the budget at TMAS's measured tokens per call of each
role. Every baseline answers as its method does (its topology's selection rule). Every system
runs as an evaluation (one saved run per problem, in a folder named by its size), so an
interrupted benchmark finishes when run again. Accuracy counts a failed problem as wrong.

    python benchmarks/accuracy.py --limit 3 [--data ../shared/data/gsm8k_test_dev.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from tmas.api import build_graph
from tmas.config import TMASConfig
from tmas.eval.data import load_problems
from tmas.eval.evaluation import Evaluation
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_router, plan_run
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.testing.fake_chat import ScriptedChatModel

DEFAULT_DATA = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gsm8k_test_dev.jsonl"
)
BASE = {"max_retries": 0, "seed": 0}


def evaluate(
    name: str, config: TMASConfig, args: argparse.Namespace, problems: list, folder: str = ""
) -> dict[str, Any]:
    backend = BackendSpec(kind="llamacpp", model=args.model).resolved()
    out_dir = args.out / (folder or name)
    plan = plan_run(load_bundled(name), config, backend)
    evaluation = Evaluation(
        problems=problems,
        plan=plan,
        router=plan_router(plan),
        db=args.out / "runs.sqlite",
        out_dir=out_dir,
    )
    started = time.monotonic()
    summary = evaluation.run()
    summary["wall_s"] = time.monotonic() - started
    rows = [json.loads(line) for line in (out_dir / "results.jsonl").read_text().splitlines()]
    summary["tokens_per_call"] = {}
    for role in ("solver", "verifier", "summary", "experience", "guideline"):
        calls = sum(r["usage"].get(role, {}).get("calls", 0) for r in rows)
        tokens = sum(
            r["usage"].get(role, {}).get("input_tokens", 0)
            + r["usage"].get(role, {}).get("output_tokens", 0)
            for r in rows
        )
        if calls:
            summary["tokens_per_call"][role] = tokens / calls
    solver_calls = sum(r["usage"].get("solver", {}).get("calls", 0) for r in rows)
    solver_out = sum(r["usage"].get("solver", {}).get("output_tokens", 0) for r in rows)
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


def calls_by_role(name: str, config: TMASConfig) -> dict[str, int]:
    """The model calls per role of one run of ``name`` at ``config``, counted on the scripted
    model (no real model runs).

    Example:
        >>> calls_by_role("verify_refine", TMASConfig(n_candidates=2, n_verifications=2,
        ...                                           max_iterations=2))
        {'solver': 4, 'verifier': 8}
    """
    model = ScriptedChatModel()
    build_graph(load_bundled(name), llm=ModelRouter(model), config=config).invoke(
        {"problem": "1 + 1?"}
    )
    return {str(role): n for role, n in sorted(model.calls.items(), key=lambda kv: str(kv[0]))}


def widest_within(
    name: str, budget: float, per_call: dict[str, float], **sizes: Any
) -> tuple[int, TMASConfig]:
    """The widest N whose calls per role, at TMAS's tokens per call of each role, cost at most
    ``budget`` (at least 1)."""

    def config(width: int) -> TMASConfig:
        return TMASConfig(n_candidates=width, **sizes, **BASE)

    def cost(width: int) -> float:
        calls = calls_by_role(name, config(width))
        return sum(n * per_call.get(role, per_call["solver"]) for role, n in calls.items())

    width = 1
    while width < 64 and cost(width + 1) <= budget:
        width += 1
    return width, config(width)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--limit", type=int, default=3)
    parser.add_argument("--model", default=None, help="qwen (default when installed), smollm2")
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/accuracy"))
    args = parser.parse_args()
    problems = load_problems(args.data, args.limit)
    tmas_config = TMASConfig(
        n_candidates=4, n_verifications=2, max_iterations=args.iterations, **BASE
    )
    results: dict[str, tuple[str, dict[str, Any]]] = {}
    tmas = evaluate("tmas", tmas_config, args, problems)
    results["tmas"] = (f"N=4 M=2 T={args.iterations}", tmas)
    budget, per_call = tmas["mean_tokens"], tmas["tokens_per_call"]

    width = max(1, round(budget / per_call["solver"]))
    mv = evaluate("majority_vote", TMASConfig(n_candidates=width, max_iterations=1, **BASE),
                  args, problems)  # fmt: skip
    results["majority_vote"] = (f"N={width}", mv)

    w = pacore_width(budget, mv["tokens_per_call"]["solver"], mv["output_tokens_per_solver_call"])
    pacore = TMASConfig(round_widths=[w, w, 1], **BASE)
    results["pacore"] = (f"{w}, {w}, 1", evaluate("pacore", pacore, args, problems,
                                                  folder=f"pacore-{w}-{w}-1"))  # fmt: skip

    for name, sizes, shape in (
        ("rsa", {"max_iterations": 3}, "N={} k=2 T=3"),
        ("self_refine", {"max_iterations": 2, "n_verifications": 1}, "N={} T=2"),
        ("verify_refine", {"max_iterations": 2, "n_verifications": 2}, "N={} M=2 T=2"),
    ):
        n, config = widest_within(name, budget, per_call, **sizes)
        summary = evaluate(name, config, args, problems, folder=f"{name}-n{n}")
        results[name] = (shape.format(n), summary)

    print(
        f"{len(problems)} problems from {args.data}; model {args.model or 'default'}; "
        f"{os.cpu_count()} cores; {platform.python_version()}"
    )
    print(
        f"{'system':<14} {'size':<14} {'selection':<14} {'accuracy':>9} {'Pass@1 last':>12} "
        f"{'tokens':>9} {'calls':>6} {'min/prob':>8} {'failed':>6}"
    )
    for name, (size, summary) in results.items():
        curve = summary["pass_at_1_per_iteration"]
        print(
            f"{name:<14} {size:<14} {','.join(summary['selections']):<14} "
            f"{100 * summary['accuracy_all']:>8.1f}% "
            f"{100 * (curve[-1] or 0) if curve else 0:>11.1f}% {summary['mean_tokens']:>9,.0f} "
            f"{summary['mean_llm_calls']:>6.1f} {summary['minutes_per_problem']:>8.1f} "
            f"{summary['failed']:>6}"
        )


if __name__ == "__main__":
    main()
