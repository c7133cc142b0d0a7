"""What each checkpoint durability mode costs and what it keeps through a kill.

For LangGraph's modes ``sync`` (the default: a step's checkpoint is written before the next
step starts), ``async`` (written while the next step runs) and ``exit`` (written when the run
stops), side by side in one run:

- cost: milliseconds per TMAS iteration (N=8, M=8) with the SQLite checkpointer and an
  instant scripted model, median of interleaved repeats, and the ratio to ``sync``;
- kept: a ``tmas solve`` process (N=3, M=2, T=3, two calls in flight) against a loopback
  scripted server, killed with SIGKILL after fixed numbers of answered calls and resumed until
  it finishes: the calls made beyond the uninterrupted run's count. ``sync`` may repeat only
  the calls in flight at each kill (at most two per kill here).

    python benchmarks/durability.py [--repeats 5] [--kills 4] [--toy]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tmas import build_tmas_graph
from tmas.config import TMASConfig
from tmas.lifecycle.manager import thread_config
from tmas.storage.checkpointer import open_checkpointer
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer

MODES = ("sync", "async", "exit")
ITERATIONS = 3
SIZES = ["-n", "3", "-m", "2", "-t", str(ITERATIONS)]
SMALL_CALLS = (3 + 3 * 2 + 3 * 3) * ITERATIONS


def ms_per_iteration(mode: str, folder: Path, width: int = 8) -> float:
    """One timed SQLite-checkpointed run of TMAS at N=M=``width``."""
    config = TMASConfig(n_candidates=width, n_verifications=width, max_iterations=ITERATIONS)
    conn = connect(folder / f"{mode}-{time.perf_counter_ns()}.sqlite")
    graph = build_tmas_graph(config, llm=ScriptedChatModel(), checkpointer=open_checkpointer(conn))
    start = time.perf_counter()
    graph.invoke({"problem": "What is 9 + 9?"}, thread_config("bench", config), durability=mode)
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed / ITERATIONS * 1000


def calls_with_kills(mode: str, kills: int, folder: Path) -> int:
    """Calls the server answered for one run killed ``kills`` times and resumed to the end."""
    db = folder / f"killed-{mode}.sqlite"
    points = [int(SMALL_CALLS * (k + 1) / (kills + 1)) for k in range(kills)]
    state = {"killed": 0, "proc": None}
    armed = threading.Event()

    def maybe_kill(count: int) -> None:
        if state["killed"] < kills and count >= points[state["killed"]] and armed.is_set():
            armed.clear()
            state["proc"].kill()  # type: ignore[union-attr]

    env = {**os.environ, "TMAS_HOME": str(folder)}
    with FakeOpenAIServer(latency_s=0.01, on_complete=maybe_kill) as server:
        first = [
            "solve", "What is 9 + 9?", "--base-url", server.base_url, "--model", "scripted",
            "--run-id", "run", "--set", f"durability={mode}", *SIZES,
        ]  # fmt: skip
        common = ["--db", str(db), "--max-concurrency", "2", "--quiet"]
        for attempt in range(kills + 2):
            args = first if attempt == 0 else ["resume", "run"]  # a resume uses the saved sizes
            state["proc"] = subprocess.Popen(
                [sys.executable, "-m", "tmas.cli", *args, *common],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            armed.set()
            _, stderr = state["proc"].communicate(timeout=300)  # type: ignore[union-attr]
            if state["proc"].returncode == -signal.SIGKILL:  # type: ignore[union-attr]
                state["killed"] += 1
                continue
            if state["proc"].returncode != 0:  # type: ignore[union-attr]
                raise SystemExit(stderr.decode())
            break
        return server.request_count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--kills", type=int, default=4)
    parser.add_argument(
        "--toy",
        action="store_true",
        help="toy size, for CI: cost at N=2 M=2, one repeat, one kill per mode",
    )
    args = parser.parse_args()
    width = 2 if args.toy else 8
    if args.toy:
        args.repeats, args.kills = 1, 1
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for mode in MODES:
            ms_per_iteration(mode, folder, width)  # warm-up
        costs: dict[str, list[float]] = {mode: [] for mode in MODES}
        for r in range(args.repeats):
            for mode in MODES[r % 3 :] + MODES[: r % 3]:  # rotating order
                costs[mode].append(ms_per_iteration(mode, folder, width))
        kept = {mode: calls_with_kills(mode, args.kills, folder) for mode in MODES}
    sync = statistics.median(costs["sync"])
    print(f"N={width} M={width}, SQLite, instant model, median of {args.repeats}; kills: N=3 "
          f"M=2 T=3, {SMALL_CALLS} calls, {args.kills} SIGKILLs, 2 calls in flight")  # fmt: skip
    print(f"{'mode':<7}{'ms/iteration':>14}{'vs sync':>9}{'calls made':>12}{'repeated':>10}")
    for mode in MODES:
        cost = statistics.median(costs[mode])
        repeated = kept[mode] - SMALL_CALLS
        print(f"{mode:<7}{cost:>14.1f}{cost / sync:>9.2f}{kept[mode]:>12}{repeated:>10}")


if __name__ == "__main__":
    main()
