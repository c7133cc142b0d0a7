"""Soak: many small problems through a fault-injecting server, with random kills and resumes.

An evaluation of ``--problems`` small problems (TMAS, N=2, M=1, one iteration: 10 calls each)
runs as a ``tmas eval`` process against a loopback server that fails ``--fault-rate`` of the
requests (HTTP 500 and 429, held-then-dropped requests, dropped connections, malformed and
empty completions). The process is killed with SIGKILL ``--kills`` times at random moments and
the same command is run again until the evaluation is complete. Then it prints:

* problems lost: problems without a finished run at the end (goal 0);
* calls repeated after kills: completions served twice for the same request. Calls in flight
  when a kill hit (served less than ``--in-flight-window`` seconds before it) are reported
  apart: their results could not have been saved;
* the overhead of retries: requests per distinct completed call, and the wall time against a
  fault-free, kill-free run of the same problems measured first.

    python benchmarks/soak.py [--problems 200] [--kills 8] [--fault-rate 0.2] [--toy]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tmas.testing.fault_server import FAILING_KINDS, FaultInjectingServer, spread_rate


class LoggingServer(FaultInjectingServer):
    """The fault server, also noting when each request that got a completion was served (by
    the request's identity: its messages and seed)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.served: list[tuple[float, str]] = []
        self._log_lock = threading.Lock()
        self._current = threading.local()
        self.on_complete = self._log_completion  # called in the serving thread on success

    def _serve_completion(self, handler: Any, body: dict, messages: list, content: Any = None):  # type: ignore[override]
        self._current.identity = hashlib.sha256(
            json.dumps([messages, body.get("seed")], sort_keys=True).encode()
        ).hexdigest()
        super()._serve_completion(handler, body, messages, content)

    def _log_completion(self, count: int) -> None:
        with self._log_lock:
            self.served.append((time.monotonic(), self._current.identity))


def write_problems(path: Path, count: int) -> None:
    """``count`` distinct addition problems (distinct, so no two runs send the same request)."""
    pairs = random.Random(7).sample([(a, b) for a in range(2, 200) for b in range(2, 200)], count)
    with path.open("w", encoding="utf-8") as handle:
        for i, (a, b) in enumerate(pairs):
            row = {"id": f"soak-{i}", "problem": f"What is {a} + {b}?", "answer": str(a + b)}
            handle.write(json.dumps(row) + "\n")


def eval_command(data: Path, out: Path, base_url: str) -> list[str]:
    return [
        sys.executable, "-m", "tmas.cli", "eval", "--graph", "tmas", "--data", str(data),
        "--out", str(out), "--db", str(out / "runs.sqlite"), "--concurrency", "4",
        "--max-concurrency", "8", "-n", "2", "-m", "1", "-t", "1", "--quiet",
        "--base-url", base_url, "--model", "scripted",
        "--set", "max_retries=4", "--set", "retry_initial_interval=0.05",
        "--set", "retry_max_interval=0.5", "--set", "retry_jitter=false",
    ]  # fmt: skip


def run_until_complete(
    command: list[str], kills: int, rng: random.Random, max_attempts: int, kill_spread_s: float
) -> tuple[float, list[float], int]:
    """Run ``command`` again until it exits 0, killing it ``kills`` times, each after a random
    0.1 to 1 x ``kill_spread_s`` seconds; returns (wall seconds, kill times, attempts)."""
    env = {**os.environ, "TMAS_HOME": tempfile.mkdtemp()}
    kill_times: list[float] = []
    started = time.monotonic()
    for attempt in range(1, max_attempts + 1):
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        if len(kill_times) < kills:
            try:
                process.wait(timeout=rng.uniform(0.1, 1.0) * kill_spread_s)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGKILL)
                kill_times.append(time.monotonic())
                process.wait()
                continue
        _, stderr = process.communicate(timeout=1800)
        if process.returncode == 0:
            return time.monotonic() - started, kill_times, attempt
        print(f"  attempt {attempt} exited {process.returncode}: {stderr.decode()[-300:]}")
    raise SystemExit(f"the evaluation did not complete in {max_attempts} attempts")


def measure(
    args: argparse.Namespace, work: Path, rates: dict[str, float], kills: int, spread_s: float
) -> dict:
    out = work / ("soak" if kills else "clean")
    rng = random.Random(args.seed)
    server = LoggingServer(
        rates, seed=args.seed, hold_s=1.0, retry_after_s=0.05,
        max_requests=args.problems * 40, max_lifetime_s=3600,
    )  # fmt: skip
    with server:
        command = eval_command(work / "problems.jsonl", out, server.base_url)
        wall, kill_times, attempts = run_until_complete(command, kills, rng, kills + 20, spread_s)
        served = list(server.served)
        injected = dict(server.injected)
    # every request either got a completion (logged, "empty" included) or an injected failure
    requests = len(served) + sum(injected.get(k, 0) for k in FAILING_KINDS if k != "empty")
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    finished = {row["id"] for row in rows if row["status"] == "finished"}
    seen: dict[str, float] = {}
    repeats, in_flight_repeats = 0, 0
    for moment, identity in sorted(served):
        if identity in seen:
            first = seen[identity]
            hit = any(first <= k <= first + args.in_flight_window for k in kill_times)
            in_flight_repeats += hit
            repeats += not hit
        else:
            seen[identity] = moment
    return {
        "wall_s": wall, "attempts": attempts, "kills": len(kill_times),
        "lost": args.problems - len(finished), "repeats": repeats,
        "in_flight_repeats": in_flight_repeats, "distinct_calls": len(seen),
        "requests": requests, "injected": injected,
        "failed_calls": sum(row.get("failed_calls", 0) or 0 for row in rows),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--problems", type=int, default=200)
    parser.add_argument("--kills", type=int, default=8)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--in-flight-window", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--toy",
        action="store_true",
        help="toy size, for CI: 2 problems, one kill, seed 1 (whose draws inject faults among "
        "the first 20 requests and kill early in the run)",
    )
    args = parser.parse_args()
    if args.toy:
        args.problems, args.kills, args.seed = 2, 1, 1
    work = Path(tempfile.mkdtemp(prefix="tmas-soak-"))
    try:
        write_problems(work / "problems.jsonl", args.problems)
        clean = measure(args, work, {}, kills=0, spread_s=0.0)
        # kills spread over about the time the whole faulty run would take unkilled
        spread = clean["wall_s"] * (1 + 5 * args.fault_rate) / max(args.kills, 1)
        soak = measure(args, work, spread_rate(args.fault_rate), args.kills, spread)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.problems} problems, TMAS N=2 M=1 T=1 (10 calls each), 4 at a time")
    print(f"clean run: {clean['wall_s']:.1f} s, {clean['requests']} requests")
    print(
        f"soak run: {args.fault_rate:.0%} faults {soak['injected']}, {soak['kills']} kills, "
        f"{soak['attempts']} invocations, {soak['wall_s']:.1f} s"
    )
    print(f"problems lost: {soak['lost']} (goal 0)")
    print(
        f"calls repeated after kills: {soak['repeats']} (goal 0); in flight at a kill and "
        f"made again: {soak['in_flight_repeats']}"
    )
    print(f"calls that failed for good (recorded, left out of votes): {soak['failed_calls']}")
    per_call = soak["requests"] / max(soak["distinct_calls"], 1)
    print(
        f"retry overhead: {per_call:.2f} requests per completed call "
        f"({soak['requests']} / {soak['distinct_calls']}); wall time x"
        f"{soak['wall_s'] / clean['wall_s']:.2f} the clean run (kills and restarts included)"
    )


if __name__ == "__main__":
    main()
