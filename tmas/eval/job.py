"""Solving one problem of an evaluation as its own saved run: the unit of work that a thread
or a Ray task executes. A job carries only plain settings, so it can travel to another machine;
the worker opens the run database and the models itself (or is handed a shared router).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tmas.eval.data import Problem
from tmas.eval.identity import identity_changes, run_identity
from tmas.eval.results import result_row
from tmas.graphs.run_plan import RunPlan, plan_router, saved_plan
from tmas.lifecycle.history import saved_state
from tmas.lifecycle.manager import RunManager
from tmas.lifecycle.run_database import open_runs
from tmas.llm.errors import ModelCallError
from tmas.llm.router import ModelRouter
from tmas.storage import StorageError
from tmas.storage.run_registry import RunRecord


def eval_run_id(out_dir: Path, problem_id: str) -> str:
    """The run id of one problem of the evaluation written to ``out_dir``.

    Example:
        >>> eval_run_id(Path("/tmp/a"), "p1") == eval_run_id(Path("/tmp/a"), "p1")
        True
    """
    tag = hashlib.sha256(str(out_dir.resolve()).encode()).hexdigest()[:8]
    return f"eval-{tag}-{problem_id}"


@dataclass(frozen=True)
class ProblemJob:
    """Everything needed to solve (or finish, or just report) one problem's run."""

    problem: Problem
    run_id: str
    plan: RunPlan
    db: str
    max_concurrency: int | None = None
    previous_wall_s: float | None = None
    plan_choice: dict[str, Any] | None = None


_ROUTERS: dict[str, ModelRouter] = {}


def _worker_router(job: ProblemJob) -> ModelRouter:
    """One router per backend, seed and role bindings in this process, reused by every job it
    runs."""
    plan = job.plan
    key = json.dumps(
        [
            plan.backend.model_dump(mode="json"),
            plan.config.seed,
            {r: b.model_dump() for r, b in plan.bindings.items()},
        ],
        sort_keys=True,
    )
    if key not in _ROUTERS:
        _ROUTERS[key] = plan_router(plan)
    return _ROUTERS[key]


def settings_mismatch(record: RunRecord, job: ProblemJob) -> str | None:
    """Why a saved run of this problem cannot be continued as part of ``job``'s evaluation:
    the differences between its saved settings and the job's, or None."""
    saved_run, plan = saved_plan(record), job.plan
    saved = run_identity(saved_run.name, saved_run.config, saved_run.backend, saved_run.topology,
                         saved_run.plugin_refs())  # fmt: skip
    current = run_identity(plan.name, plan.config, plan.backend, plan.topology,
                           plan.plugin_refs())  # fmt: skip
    changes = identity_changes(saved, current)
    if not changes:
        return None
    return (
        f"run {record.run_id} was saved with other settings ({'; '.join(changes[:4])}); "
        "rerun with those settings or write this evaluation to another --out folder"
    )


def with_plan(row: dict[str, Any], job: ProblemJob) -> dict[str, Any]:
    """A results row with the plan the reward model chose and every candidate's score (runs
    of ``--graph auto``); as it is otherwise.

    Example:
        >>> from types import SimpleNamespace
        >>> job = SimpleNamespace(plan_choice={"chosen": "mv", "candidates": [
        ...     {"name": "mv", "score": 1.5}, {"name": "bad", "score": None}]})
        >>> with_plan({"id": "p"}, job)
        {'id': 'p', 'plan': 'mv', 'plan_scores': {'mv': 1.5}}
    """
    choice = getattr(job, "plan_choice", None)
    if choice is None:
        return row
    scores = {c["name"]: c["score"] for c in choice["candidates"] if c["score"] is not None}
    return {**row, "plan": choice["chosen"], "plan_scores": scores}


def solve_problem(job: ProblemJob, router: ModelRouter | None = None) -> dict[str, Any]:
    """Start, resume or report the run of ``job`` and return its results row (never raises:
    a failure is reported in the row's ``error``; ``fatal`` when no other problem can succeed
    either until a setting is fixed, see ``ModelCallError.fatal``)."""
    problem, run_id, name = job.problem, job.run_id, job.plan.name
    try:
        storage = open_runs(job.db)
    except StorageError as exc:
        return result_row(problem, run_id, name, {}, None, str(exc))
    shared = router or _worker_router(job)
    manager = RunManager(storage, router_factory=lambda plan: shared)
    started = time.monotonic()
    error, fatal = None, False
    try:
        if manager.registry.exists(run_id):  # its settings were checked by the evaluation
            state = saved_state(storage, run_id)
            if state.get("stop_reason"):  # finished in an earlier invocation
                return with_plan(result_row(problem, run_id, name, state, job.previous_wall_s), job)
            outcome = manager.resume(
                run_id, show_progress=False, max_concurrency=job.max_concurrency
            )
        else:
            outcome = manager.start(
                run_id,
                problem=problem.problem,
                gold_answer=problem.solution if job.plan.config.proof else problem.answer,
                plan=job.plan,
                show_progress=False,
                max_concurrency=job.max_concurrency,
                plan_choice=job.plan_choice,
            )
        state = outcome.state
    except Exception as exc:  # noqa: BLE001 - one failed problem must not stop the rest
        fatal = isinstance(exc, ModelCallError) and exc.fatal is not None
        error = str(exc) if fatal else f"{type(exc).__name__}: {exc}"
        state = saved_state(storage, run_id) if manager.registry.exists(run_id) else {}
    finally:
        storage.close()
    wall = time.monotonic() - started + (job.previous_wall_s or 0.0)
    return with_plan(result_row(problem, run_id, name, state, wall, error, fatal=fatal), job)


def solve_concurrently(
    tasks: Sequence[Callable[[], dict[str, Any]]], workers: int, stop: threading.Event
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Run ``tasks`` (each solving one problem into a results row) ``workers`` at a time and
    yield ``(index, row)`` as each finishes. A row marked ``fatal`` sets ``stop`` before its
    worker takes another task; once ``stop`` is set no task starts. Interrupted (Ctrl-C, or
    the caller stops reading), it sets ``stop``, drops the tasks not started and returns at
    once: the runs started are saved and resume.

    Example:
        >>> rows = [lambda: {"id": "a"}, lambda: {"id": "b", "fatal": True}, lambda: {"id": "c"}]
        >>> stop = threading.Event()
        >>> [row["id"] for _, row in solve_concurrently(rows, 1, stop)], stop.is_set()
        (['a', 'b'], True)
    """

    def solve(index: int) -> tuple[int, dict[str, Any] | None]:
        if stop.is_set():
            return index, None
        row = tasks[index]()
        if row.get("fatal"):
            stop.set()
        return index, row

    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(solve, index) for index in range(len(tasks))]
        for future in as_completed(futures):
            index, row = future.result()
            if row is not None:
                yield index, row
    except BaseException:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
