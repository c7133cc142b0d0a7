"""LatentMAS against the same agents passing text and against a single agent, side by side on
one model, then again after DiffMAS training of the latent chain's final agent.

Everything runs in-process through transformers (``--backend hf``, the only backend that
exposes hidden states), greedy, one answer per problem, with the same answer budget for every
final agent. The problems are generated one-step word problems (``word_problems.py``:
SmolLM2-135M gets some right); the training problems are other ones of the same family, each
with its worked reference solution as the final agent's target.

    python benchmarks/latent_vs_text.py [--problems 20] [--train 32] [--steps 16] [--model smollm2]

Prints one table: accuracy, generated tokens per problem (latent steps counted apart) and wall
time per problem of each system, measured in this one run.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from hybrid_rl import tmas
from word_problems import ONE_STEP, generate

BUDGET = 128
CHAIN = ("planner", "critic", "refiner", "judger")


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def evaluate(graph: str, data: Path, out: Path, model: str, adapter: Path | None) -> float:
    roles = {role: {"max_tokens": BUDGET} for role in CHAIN}
    command = [
        "eval", "--data", str(data), "--out", str(out), "--db", str(out.parent / "runs.sqlite"),
        "--graph", graph, "-n", "1", "--temperature", "0", "--max-tokens", str(BUDGET),
        "--backend", "hf", "--model", model, "--concurrency", "1", "--quiet",
    ]  # fmt: skip
    if graph != "majority_vote":
        command += ["--set", f"roles={json.dumps(roles)}"]
    if adapter is not None:
        command += ["--adapter", str(adapter)]
    wall, _ = tmas(*command, label=f"tmas eval of {graph}")
    return wall


def measured(out: Path, wall: float) -> dict[str, float]:
    """Accuracy, tokens per problem (decoded, and latent steps) and wall time per problem."""
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    latent = 0
    from tmas.lifecycle.history import saved_state
    from tmas.storage.sqlite import connect

    connection = connect(out.parent / "runs.sqlite")
    for row in rows:
        agents = (saved_state(connection, row["run_id"]).get("extras") or {}).get("agents", [])
        latent += sum(int(a["segment"]["latent_steps"]) for a in agents if "segment" in a)
    count = len(rows)
    return {
        "accuracy": sum(bool(r["correct"]) for r in rows) / count,
        "decoded": sum(r["tokens_out"] for r in rows) / count,
        "latent": latent / count,
        "prompt": sum(r["tokens_in"] for r in rows) / count,
        "wall": wall / count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--train", type=int, default=32, help="training problems")
    parser.add_argument("--steps", type=int, default=16, help="DiffMAS training steps")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="latent-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    test = write_jsonl(out / "test.jsonl", generate(args.problems, seed=11, kinds=ONE_STEP))
    train = write_jsonl(out / "train.jsonl", generate(args.train, seed=5, kinds=ONE_STEP))

    results: dict[str, dict[str, float]] = {}
    for label, graph in (("single agent", "majority_vote"), ("text_mas", "text_mas"),
                         ("latent_mas", "latent_mas")):  # fmt: skip
        wall = evaluate(graph, test, out / graph, args.model, None)
        results[label] = measured(out / graph, wall)
    training = ["train", "latent", str(train), "--out", str(out / "diffmas"), "--model",
                args.model, "--steps", str(args.steps), "--quiet"]  # fmt: skip
    train_wall, _ = tmas(*training, label="tmas train latent")
    record = json.loads((out / "diffmas" / "training.json").read_text())
    adapter = out / "diffmas" / "adapter"
    wall = evaluate("latent_mas", test, out / "latent_mas_trained", args.model, adapter)
    results["latent_mas + DiffMAS"] = measured(out / "latent_mas_trained", wall)

    print(f"\n{args.problems} generated word problems, {args.model}, greedy, final answers "
          f"<= {BUDGET} "
          f"tokens; DiffMAS: {args.steps} steps on {args.train} other problems in "
          f"{train_wall:.0f} s, target loss {record['loss_before']:.3f} -> "
          f"{record['loss_after']:.3f}\n")  # fmt: skip
    print("| system | accuracy | decoded tokens/problem | latent steps/problem "
          "| prompt tokens/problem | wall s/problem |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for label, row in results.items():
        print(f"| {label} | {row['accuracy']:.0%} | {row['decoded']:.0f} | {row['latent']:.0f} | "
              f"{row['prompt']:.0f} | {row['wall']:.1f} |")  # fmt: skip
    text, latent = results["text_mas"], results["latent_mas"]
    print(f"\nlatent_mas / text_mas: decoded tokens {latent['decoded'] / text['decoded']:.2f}, "
          f"wall time {latent['wall'] / text['wall']:.2f}")  # fmt: skip
    print(f"files: {out}")


if __name__ == "__main__":
    main()
