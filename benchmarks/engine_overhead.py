"""Engine overhead: what running TMAS as a LangGraph graph costs over a plain asyncio loop.

Both sides drive the same instant fake chat model (``ScriptedChatModel``) through the same
``ModelRouter`` and make the same LLM calls with the same prompts, seeds and limits:

* A: ``build_tmas_graph(TMASConfig(n_candidates=8, n_verifications=8, max_iterations=T))``
  invoked with ``max_concurrency=16``, once without a checkpointer (A) and once with the
  SQLite checkpointer of ``tmas.storage.sqlite`` on a temporary file (A_sqlite), and with
  that checkpointer awaited with ``ainvoke`` on one event loop, as ``tmas solve`` drives a
  run (A_async_sqlite);
* B: a plain asyncio loop calling the package's node classes and task builders directly,
  merging their updates with the reducers declared on ``tmas.state.RunState`` and running
  each fan-out with ``asyncio.gather`` over ``asyncio.to_thread`` under a
  ``Semaphore(16)`` (on a 16-thread executor, as the graph uses).

Before timing, one run of each side records a digest of every prompt and checks that the
prompt multisets and the final states agree; every timed run asserts its calls per role.
Runs are interleaved (A, A_sqlite and B in rotating order) and the median is reported, as
milliseconds per TMAS iteration, together with the ratios A/B and A_sqlite/B.

Run it from the repository root::

    python benchmarks/engine_overhead.py [--iterations 5] [--repeats 5] [--toy]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import os
import platform
import statistics
import sys
import tempfile
import time
import typing
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path
from typing import Any

from langchain_core.outputs import ChatResult
from pydantic import PrivateAttr

from tmas import build_tmas_graph
from tmas.config import TMASConfig
from tmas.lifecycle.event_loop import run_to_end
from tmas.llm.router import ModelRouter
from tmas.nodes.agents.reflection import reflection_tasks
from tmas.nodes.agents.solver import solver_tasks
from tmas.nodes.agents.summarizer import summary_tasks
from tmas.nodes.agents.verifier import verification_tasks
from tmas.nodes.context import NodeContext
from tmas.nodes.tasks import TaskRequest
from tmas.registration import registry
from tmas.state import RunState
from tmas.storage.checkpointer import open_checkpointer
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel

MAX_CONCURRENCY = 16
GRAPH_SIDES = ("A", "A_sqlite", "A_async_sqlite")
GOAL_RATIO = 1.3
PROBLEM = "A train covers 240 km in 3 hours. How many km does it cover in 45 minutes?"
Timed = tuple[float, dict[str, Any]]
COMPARED_KEYS = ("history", "final_answer", "stop_reason", "experience_bank", "guideline_bank")

REDUCERS: dict[str, Callable[[Any, Any], Any]] = {
    key: hint.__metadata__[0]
    for key, hint in typing.get_type_hints(RunState, include_extras=True).items()
    if hasattr(hint, "__metadata__")
}


class InstantChatModel(ScriptedChatModel):
    """The scripted model (no latency); with ``record=True`` it keeps a digest of each call."""

    record: bool = False
    _digests: list[str] = PrivateAttr(default_factory=list)

    def _generate(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if self.record:
            seen = repr(([m.content for m in messages], sorted(kwargs.items())))
            digest = hashlib.sha256(seen.encode("utf-8")).hexdigest()
            with self._lock:
                self._digests.append(digest)
        return super()._generate(messages, stop, run_manager, **kwargs)

    @property
    def digests(self) -> Counter:
        """The multiset of recorded call digests."""
        with self._lock:
            return Counter(self._digests)


def make_config(iterations: int) -> TMASConfig:
    return TMASConfig(n_candidates=8, n_verifications=8, max_iterations=iterations)


def first_input(config: TMASConfig) -> dict[str, Any]:
    return {"problem": PROBLEM, "gold_answer": "60", "config": config.model_dump()}


def expected_calls(config: TMASConfig) -> Counter:
    n, m, t = config.n_candidates, config.n_verifications, config.max_iterations
    return Counter(
        {
            "solver": n * t,
            "verifier": n * m * t,
            "summary": n * t,
            "experience": n * t,
            "guideline": n * t,
        }
    )


def run_graph(
    config: TMASConfig, model: InstantChatModel, sqlite_dir: Path | None, awaited: bool = False
) -> Timed:
    """Side A: one graph run; returns (seconds, final state). Setup is not timed."""
    run_config: dict[str, Any] = {"max_concurrency": MAX_CONCURRENCY, "recursion_limit": 10_000}
    conn = None
    checkpointer = None
    if sqlite_dir is not None:
        conn = connect(sqlite_dir / f"bench-{time.perf_counter_ns()}.sqlite")
        checkpointer = open_checkpointer(conn)
        run_config["configurable"] = {"thread_id": "bench"}
    graph = build_tmas_graph(config, llm=model, checkpointer=checkpointer)
    gc.collect()
    try:
        start = time.perf_counter()
        if awaited:
            state = run_to_end(lambda: graph.ainvoke(first_input(config), run_config))
        else:
            state = graph.invoke(first_input(config), run_config)
        elapsed = time.perf_counter() - start
    finally:
        if conn is not None:
            conn.close()
    return elapsed, dict(state)


def apply(state: dict[str, Any], update: dict[str, Any]) -> None:
    """Merge one node's update into ``state`` as the graph's channels would."""
    for key, value in update.items():
        reducer = REDUCERS.get(key)
        state[key] = reducer(state.get(key), value) if reducer else value


def node_of(kind: str, config: TMASConfig, router: ModelRouter) -> Callable[[dict], dict]:
    """The node of registered type ``kind`` as the compiler makes it (its role's context)."""
    node_type = registry().nodes[kind]
    role = node_type.role or "solver"
    return node_type.factory(NodeContext(config, router, role=role, group=node_type.prompt_group))


async def plain_loop(config: TMASConfig, router: ModelRouter) -> dict[str, Any]:
    """Side B: the TMAS loop as plain asyncio, same nodes, same calls, no engine."""
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(MAX_CONCURRENCY))
    limit = asyncio.Semaphore(MAX_CONCURRENCY)
    start_iteration, update_banks, record_iteration, solve, verify, summarize = (
        node_of(kind, config, router)
        for kind in ("start_iteration", "update_banks", "record_iteration", "solve", "verify",
                     "summarize")
    )  # fmt: skip
    experience = node_of("extract_experience", config, router)
    guideline = node_of("extract_guideline", config, router)

    async def call(node: Callable[[dict], dict], task: dict[str, Any]) -> dict[str, Any]:
        async with limit:
            return await asyncio.to_thread(node, task)

    async def fan_out(pairs: list[tuple[Callable[[dict], dict], dict[str, Any]]]) -> None:
        for update in await asyncio.gather(*(call(node, task) for node, task in pairs)):
            apply(state, update)

    state: dict[str, Any] = {}
    apply(state, first_input(config))
    while not state.get("stop_reason"):
        apply(state, start_iteration(state))
        await fan_out([(solve, task) for task in solver_tasks(TaskRequest(state, config))])
        await fan_out([(verify, task) for task in verification_tasks(TaskRequest(state, config))])
        await fan_out([(summarize, task) for task in summary_tasks(TaskRequest(state, config))])
        await fan_out(
            [
                (node, task)
                for task in reflection_tasks(TaskRequest(state, config))
                for node in (experience, guideline)
            ]
        )
        apply(state, update_banks(state))
        apply(state, record_iteration(state))
    return state


def run_plain(config: TMASConfig, model: InstantChatModel) -> Timed:
    """Side B: one plain run; returns (seconds, final state)."""
    router = ModelRouter(model)
    gc.collect()
    start = time.perf_counter()
    state = asyncio.run(plain_loop(config, router))
    return time.perf_counter() - start, state


def run_side(
    side: str, config: TMASConfig, sqlite_dir: Path, record: bool = False
) -> tuple[float, dict[str, Any], InstantChatModel]:
    """One run of ``side`` on a fresh model; asserts the calls per role."""
    model = InstantChatModel(record=record)
    if side == "B":
        elapsed, state = run_plain(config, model)
    else:
        with_sqlite = side in ("A_sqlite", "A_async_sqlite")
        awaited = side == "A_async_sqlite"
        elapsed, state = run_graph(config, model, sqlite_dir if with_sqlite else None, awaited)
    calls = model.calls
    assert calls == expected_calls(config), f"{side} made calls {dict(calls)}"
    return elapsed, state, model


def check_same_work(config: TMASConfig, sqlite_dir: Path) -> None:
    """Untimed: every side sends the same prompts and ends in the same state."""
    _, ref_state, ref_model = run_side("B", config, sqlite_dir, record=True)
    for side in GRAPH_SIDES:
        _, state, model = run_side(side, config, sqlite_dir, record=True)
        assert model.digests == ref_model.digests, f"{side} sent other prompts than B"
        for key in COMPARED_KEYS:
            assert state.get(key) == ref_state.get(key), f"{side} and B differ in {key!r}"


def machine() -> str:
    return (
        f"cpus={os.cpu_count()} python={platform.python_version()} "
        f"({platform.python_implementation()}, {platform.machine()}) "
        f"langgraph={version('langgraph')} langchain-core={version('langchain-core')} "
        f"platform={platform.platform()}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5, help="TMAS iterations per run")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each side")
    parser.add_argument("--toy", action="store_true", help="one iteration, one repeat (CI)")
    args = parser.parse_args(argv)
    if args.toy:
        args.iterations, args.repeats = 1, 1
    if args.iterations < 1 or args.repeats < 1:
        parser.error("--iterations and --repeats must be at least 1")

    config = make_config(args.iterations)
    sides = (*GRAPH_SIDES, "B")
    print("TMAS engine overhead: LangGraph graph (A) vs plain asyncio loop (B)")
    print(f"machine: {machine()}")
    print(
        f"workload: N={config.n_candidates} M={config.n_verifications} "
        f"T={config.max_iterations}, {config.calls_per_iteration()} LLM calls per iteration, "
        f"max_concurrency={MAX_CONCURRENCY}, repeats={args.repeats}"
    )

    times: dict[str, list[float]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="tmas-bench-") as tmp:
        sqlite_dir = Path(tmp)
        check_same_work(config, sqlite_dir)
        print("check: same prompts, same calls per role, same final state on all sides")
        for repeat in range(args.repeats):
            order = sides[repeat % len(sides) :] + sides[: repeat % len(sides)]
            for side in order:
                elapsed, _, _ = run_side(side, config, sqlite_dir)
                times[side].append(elapsed * 1000 / config.max_iterations)
            print(
                f"  repeat {repeat + 1}/{args.repeats}: "
                + "  ".join(f"{side}={times[side][-1]:7.1f}" for side in sides)
                + "  ms/iteration"
            )

    median = {side: statistics.median(times[side]) for side in sides}
    print("median ms per iteration:")
    for side, label in zip(
        sides,
        ("graph, no checkpointer", "graph, SQLite", "graph, SQLite, ainvoke", "plain asyncio"),
        strict=True,
    ):
        print(f"  {side:<15}{median[side]:8.1f}  ({label})")
    print(f"goal: ratio at most {GOAL_RATIO}")
    for side in GRAPH_SIDES:
        ratio = median[side] / median["B"]
        verdict = "meets goal" if ratio <= GOAL_RATIO else "above goal"
        print(f"  {side}/B = {ratio:.2f}  ({verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
