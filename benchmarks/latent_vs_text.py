"""DiffMAS with controls: the same LoRA budget on the final agent of ``latent_mas`` (reading the
latent trace), of ``text_mas`` (reading the notes its agents write) and of a single agent (the
same judger with nothing before it), each evaluated before and after training on the same
held-out problems, with paired 95% intervals, tokens and wall time.

Everything runs in-process through transformers (``--backend hf``, the only backend that
exposes hidden states), greedy, one answer per problem, with the same answer budget for every
final agent. Problems are generated one-step word problems (``word_problems.py``: SmolLM2-135M
gets some right); the training problems are other ones of the same family, each with its
worked reference solution as the target (``tmas train latent``: stage I on the base weights,
stage II LoRA SFT of the final agent). What differs between the three systems is only what the
final agent reads: a latent trace, text notes, or nothing.

    python benchmarks/latent_vs_text.py --out DIR [--eval 100] [--train 64] [--steps 32]
    python benchmarks/latent_vs_text.py --toy [--out DIR]

Prints one table and writes ``report.json`` in ``--out`` (with ``--toy`` and no ``--out``, in a
temporary folder removed at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from hybrid_rl import tmas
from word_problems import ONE_STEP, generate

from tmas.eval.intervals import paired_difference

HERE = Path(__file__).resolve().parent
SYSTEMS = {  # label: (topology, upstream agents)
    "single agent": (str(HERE / "specs" / "judger_only.yaml"), ()),
    "text_mas": ("text_mas", ("planner", "critic", "refiner")),
    "latent_mas": ("latent_mas", ("planner", "critic", "refiner")),
}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def evaluate(label: str, data: Path, out: Path, args: argparse.Namespace,
             adapter: Path | None) -> tuple[list[bool], dict[str, float]]:  # fmt: skip
    """One system on the held-out problems: correctness per problem (in order) and means."""
    graph, upstream = SYSTEMS[label]
    roles: dict[str, dict[str, Any]] = {agent: {"max_tokens": args.notes} for agent in upstream}
    roles["judger"] = {"max_tokens": args.budget}
    if adapter is not None and label == "text_mas":  # text agents are plain calls: the
        roles["judger"]["adapter"] = str(adapter)  # judger alone gets the adapter
    command = ["eval", "--data", str(data), "--out", str(out), "--db", str(out / "runs.sqlite"),
               "--graph", graph, "-n", "1", "--temperature", "0", "--max-tokens",
               str(args.budget), "--backend", "hf", "--model", args.model, "--concurrency", "1",
               "--quiet", "--set", f"roles={json.dumps(roles)}"]  # fmt: skip
    if adapter is not None and label != "text_mas":
        command += ["--adapter", str(adapter)]
    wall, _ = tmas(*command, label=f"evaluation of {label}")
    rows = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    ordered = [rows[json.loads(line)["id"]] for line in data.read_text().splitlines()]
    count = len(ordered)
    return [bool(r["correct"]) for r in ordered], {
        "accuracy": sum(bool(r["correct"]) for r in ordered) / count,
        "decoded_tokens": sum(r["tokens_out"] for r in ordered) / count,
        "prompt_tokens": sum(r["tokens_in"] for r in ordered) / count,
        "wall_s": wall / count,
    }


def train(label: str, data: Path, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The same DiffMAS training (steps, batch, learning rate, LoRA) of one system's judger."""
    graph, _ = SYSTEMS[label]
    command = ["train", "latent", str(data), "--out", str(out), "--graph", graph, "--model",
               args.model, "--steps", str(args.steps), "--batch-size", str(args.batch_size),
               "--learning-rate", str(args.learning_rate), "--notes-max-tokens", str(args.notes),
               "--quiet"]  # fmt: skip
    wall, _ = tmas(*command, label=f"training of {label}")
    record = json.loads((out / "training.json").read_text())
    return {"wall_s": round(wall), "loss_before": record["loss_before"],
            "loss_after": record["loss_after"]}  # fmt: skip


def interval(before: list[bool], after: list[bool]) -> list[float]:
    paired = paired_difference(before, after)
    return [paired.difference, paired.low, paired.high]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="where the runs go (required without --toy)")
    parser.add_argument("--eval", type=int, default=100, help="held-out problems")
    parser.add_argument("--train", type=int, default=64, help="training problems")
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--budget", type=int, default=128, help="final answers' tokens")
    parser.add_argument("--notes", type=int, default=64, help="text agents' notes' tokens")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument(
        "--toy",
        action="store_true",
        help="toy size, for CI: smollm2, 1 held-out and 1 training problem, one training step "
        "of batch 1, 8-token answers and notes, torch on one thread",
    )
    args = parser.parse_args()
    if args.toy:
        args.model, args.eval, args.train, args.steps, args.batch_size = "smollm2", 1, 1, 1, 1
        args.budget, args.notes = 8, 8
        os.environ["OMP_NUM_THREADS"] = "1"  # torch's threads in the tmas processes
    elif args.out is None:
        parser.error("--out is required (without --toy)")
    with ExitStack() as stack:
        if args.out is None:
            args.out = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        compare(args)


def compare(args: argparse.Namespace) -> None:
    """Evaluate, train and evaluate again each system; print the table, write the report."""
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    test = write_jsonl(out / "test.jsonl", generate(args.eval, seed=11, kinds=ONE_STEP))
    data = write_jsonl(out / "train.jsonl", generate(args.train, seed=5, kinds=ONE_STEP))
    report: dict[str, Any] = {"settings": vars(args) | {"out": str(out)}, "systems": {}}
    right: dict[str, dict[str, list[bool]]] = {}
    for label in SYSTEMS:
        folder = out / label.replace(" ", "_")
        before, base = evaluate(label, test, folder / "before", args, None)
        training = train(label, data, folder / "train", args)
        after, trained = evaluate(label, test, folder / "after", args, folder / "train" / "adapter")
        right[label] = {"before": before, "after": after}
        report["systems"][label] = {"before": base, "after": trained, "training": training,
                                    "after_minus_before": interval(before, after)}  # fmt: skip
    single = right["single agent"]["after"]
    for label in ("text_mas", "latent_mas"):
        report["systems"][label]["after_minus_single_after"] = interval(
            single, right[label]["after"]
        )
    (out / "report.json").write_text(json.dumps(report, indent=1))
    print(f"\n{args.eval} held-out word problems, {args.model}, greedy, answers <= {args.budget} "
          f"tokens, notes <= {args.notes}; the same training for each: {args.steps} steps x "
          f"{args.batch_size} of {args.train} problems, lr {args.learning_rate}\n")  # fmt: skip
    print("| system | before | after | after - before [95%] | decoded tok | wall s/problem |")
    print("|---|---|---|---|---|---|")
    for label, row in report["systems"].items():
        diff, low, high = row["after_minus_before"]
        print(f"| {label} | {row['before']['accuracy']:.0%} | {row['after']['accuracy']:.0%} | "
              f"{100 * diff:+.0f} [{100 * low:+.0f}, {100 * high:+.0f}] | "
              f"{row['after']['decoded_tokens']:.0f} | {row['after']['wall_s']:.1f} |")  # fmt: skip
    for label in ("text_mas", "latent_mas"):
        diff, low, high = report["systems"][label]["after_minus_single_after"]
        print(f"{label} after - single agent after: {100 * diff:+.0f} points "
              f"[{100 * low:+.0f}, {100 * high:+.0f}]")  # fmt: skip
    print(f"files: {out}")


if __name__ == "__main__":
    main()
