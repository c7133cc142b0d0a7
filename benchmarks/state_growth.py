"""State growth over a long run: checkpoint bytes and prompt tokens per iteration.

Runs 20 TMAS iterations (N=8, M=4) on the scripted fake model with the SQLite checkpointer,
then prints, per iteration, the size of the last checkpoint of that iteration (the stored
state) and the prompt tokens the agents were sent. Goal: iteration 20 at most 1.5 x
iteration 2 for both (state and prompts stay bounded).

    python benchmarks/state_growth.py [--iterations 20]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path

from tmas.checkpoint import connect, open_checkpointer
from tmas.config import TMASConfig
from tmas.graphs import build_tmas_graph
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies

STRATEGIES = tuple(
    f"Strategy family {i}: attack the problem with approach number {i}" for i in range(40)
)


def checkpoint_bytes_per_iteration(db: Path, thread: str) -> dict[int, int]:
    """Size of the newest checkpoint blob written while each iteration ran."""
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "select checkpoint_id, length(checkpoint), json_extract(metadata, '$.step') "
        "from checkpoints where thread_id=? order by checkpoint_id",
        (thread,),
    ).fetchall()
    conn.close()
    return {step: size for _, size, step in rows if step is not None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    config = TMASConfig(n_candidates=8, n_verifications=4, max_iterations=args.iterations)
    db = Path(tempfile.mkdtemp()) / "runs.sqlite"
    graph = build_tmas_graph(
        config,
        llm=ScriptedChatModel(replies=ScriptedReplies(strategies=STRATEGIES)),
        checkpointer=open_checkpointer(connect(db)),
    )
    thread = {"configurable": {"thread_id": "growth"}, "max_concurrency": 64}
    prompt_tokens: dict[int, int] = {}
    state_bytes: dict[int, int] = {}
    iteration = 0
    by_step = {}
    for chunk in graph.stream({"problem": "What is 9 + 9?"}, thread, stream_mode="updates"):
        for node, update in chunk.items():
            if node == "start_iteration":
                iteration = update["iteration"]
            for usage in (update or {}).get("usage", {}).values():
                prompt_tokens[iteration] = prompt_tokens.get(iteration, 0) + usage["input_tokens"]
        by_step = checkpoint_bytes_per_iteration(db, "growth")
        state_bytes[iteration] = max(by_step.values()) if by_step else 0
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


if __name__ == "__main__":
    main()
