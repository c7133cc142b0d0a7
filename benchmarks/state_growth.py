"""State growth over a long run: checkpoint bytes and prompt tokens per iteration.

Runs 20 TMAS iterations (N=8, M=4) on the scripted fake model with the SQLite checkpointer,
then prints, per iteration, the size of the largest checkpoint written while it ran (the stored
state) and the prompt tokens the agents were sent, and which channels grew. Goal: iteration
20 at most 1.5 x iteration 2 for both (state and prompts stay bounded).

    python benchmarks/state_growth.py [--iterations 20] [--toy]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path

from tmas import build_tmas_graph
from tmas.config import TMASConfig
from tmas.storage.checkpointer import open_checkpointer, strict_serializer
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies

STRATEGIES = tuple(
    f"Strategy family {i}: attack the problem with approach number {i}" for i in range(40)
)


def checkpoints_by_iteration(db: Path, thread: str) -> dict[int, tuple[int, dict[str, int]]]:
    """Per iteration, the largest checkpoint written while it ran: (bytes, bytes per channel)."""
    serde = strict_serializer()
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "select type, checkpoint from checkpoints where thread_id=? and checkpoint_ns=''",
        (thread,),
    ).fetchall()
    conn.close()
    largest: dict[int, tuple[int, dict[str, int]]] = {}
    for kind, blob in rows:
        values = serde.loads_typed((kind, blob))["channel_values"]
        iteration = values.get("iteration", 0)
        if iteration and len(blob) > largest.get(iteration, (0, {}))[0]:
            sizes = {key: len(serde.dumps_typed(value)[1]) for key, value in values.items()}
            largest[iteration] = (len(blob), sizes)
    return largest


def print_growth(first: dict[str, int], last: dict[str, int], label: str) -> None:
    """Where the bytes went between two checkpoints, largest change first."""
    print(f"bytes per channel, {label} (channels that changed by 100 bytes or more):")
    changes = {key: last.get(key, 0) - first.get(key, 0) for key in {*first, *last}}
    for key in sorted(changes, key=lambda k: -abs(changes[k])):
        if abs(changes[key]) >= 100:
            print(f"  {key:>22}: {first.get(key, 0):>7,} -> {last.get(key, 0):>7,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument(
        "--toy", action="store_true", help="toy size, for CI: N=2 M=1, three iterations"
    )
    args = parser.parse_args()
    n, m = (2, 1) if args.toy else (8, 4)
    if args.toy:
        args.iterations = 3  # the goal compares the last iteration with the second
    config = TMASConfig(n_candidates=n, n_verifications=m, max_iterations=args.iterations)
    db = Path(tempfile.mkdtemp()) / "runs.sqlite"
    graph = build_tmas_graph(
        config,
        llm=ScriptedChatModel(replies=ScriptedReplies(strategies=STRATEGIES)),
        checkpointer=open_checkpointer(connect(db)),
    )
    thread = {"configurable": {"thread_id": "growth"}, "max_concurrency": 64}
    prompt_tokens: dict[int, int] = {}
    iteration = 0
    for chunk in graph.stream({"problem": "What is 9 + 9?"}, thread, stream_mode="updates"):
        for node, update in chunk.items():
            if node == "start_iteration":
                iteration = update["iteration"]
            for usage in (update or {}).get("usage", {}).values():
                prompt_tokens[iteration] = prompt_tokens.get(iteration, 0) + usage["input_tokens"]
    largest = checkpoints_by_iteration(db, "growth")
    state_bytes = {it: size for it, (size, _) in largest.items()}
    print(f"N={config.n_candidates} M={config.n_verifications} T={args.iterations}")
    print(f"{'iteration':>9} {'checkpoint bytes':>17} {'prompt tokens':>14}")
    for it in sorted(prompt_tokens):
        print(f"{it:>9} {state_bytes[it]:>17,} {prompt_tokens[it]:>14,}")
    last = max(prompt_tokens)
    state_ratio = state_bytes[last] / state_bytes[2]
    prompt_ratio = prompt_tokens[last] / prompt_tokens[2]
    verdict = "ok" if max(state_ratio, prompt_ratio) <= 1.5 else "above goal"
    print(
        f"iteration {last} / iteration 2: checkpoint {state_ratio:.2f}, prompts "
        f"{prompt_ratio:.2f} (goal at most 1.5: {verdict})"
    )
    plateau = min(it for it in state_bytes if state_bytes[it] >= state_bytes[last])
    print(
        f"checkpoint size stops growing at iteration {plateau}; iteration {last} / iteration "
        f"{plateau}: {state_bytes[last] / state_bytes[plateau]:.2f}"
    )
    print_growth(largest[2][1], largest[last][1], f"iteration 2 -> {last}")


if __name__ == "__main__":
    main()
