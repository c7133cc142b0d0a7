"""Running a topology over many problems: one saved run per problem, resumable as a whole.

Each problem is its own run (thread) in the run database, with an id derived from the output
folder and the problem id, so the same command run again skips finished problems and resumes
unfinished ones from their checkpoints. Problems run concurrently, each worker with its own
database connection; all share one set of models.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tmas.checkpoint import StorageError, connect, open_checkpointer
from tmas.config import TMASConfig
from tmas.eval.data import Problem
from tmas.eval.report import result_row, summarize
from tmas.graphs.spec import GraphSpec
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.runner import RunManager, saved_state

RESULTS = "results.jsonl"
SUMMARY = "summary.json"


def eval_run_id(out_dir: Path, problem_id: str) -> str:
    """The run id of one problem of the evaluation written to ``out_dir``.

    Example:
        >>> eval_run_id(Path("/tmp/a"), "p1") == eval_run_id(Path("/tmp/a"), "p1")
        True
    """
    tag = hashlib.sha256(str(out_dir.resolve()).encode()).hexdigest()[:8]
    return f"eval-{tag}-{problem_id}"


@dataclass
class Evaluation:
    """One evaluation: what runs, on what, where results go."""

    problems: list[Problem]
    spec: GraphSpec
    config: TMASConfig
    backend: BackendSpec
    router: ModelRouter
    db_path: Path
    out_dir: Path
    plugins: list[str] = field(default_factory=list)
    concurrency: int = 1
    max_concurrency: int = 16
    on_row: Callable[[dict[str, Any]], None] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _previous_rows(self) -> dict[str, dict[str, Any]]:
        path = self.out_dir / RESULTS
        if not path.exists():
            return {}
        rows = {}
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                row = json.loads(line)
                rows[row["id"]] = row
            except (json.JSONDecodeError, KeyError, TypeError):
                continue  # a line cut short by a kill: the run itself is in the database
        return rows

    def _solve_one(self, problem: Problem, previous: dict[str, Any] | None) -> dict[str, Any]:
        run_id = eval_run_id(self.out_dir, problem.id)
        try:
            manager = RunManager(connect(self.db_path), router_factory=lambda b, c: self.router)
        except StorageError as exc:
            return result_row(problem, run_id, self.spec.name, {}, None, str(exc))
        started = time.monotonic()
        error = None
        try:
            if manager.registry.exists(run_id):
                state = saved_state(manager.conn, run_id)
                if state.get("stop_reason"):  # finished in an earlier invocation
                    wall = previous.get("wall_s") if previous else None
                    return result_row(problem, run_id, self.spec.name, state, wall)
                outcome = manager.resume(
                    run_id, show_progress=False, max_concurrency=self.max_concurrency
                )
            else:
                outcome = manager.start(
                    run_id,
                    problem=problem.problem,
                    gold_answer=problem.answer,
                    config=self.config,
                    backend=self.backend,
                    spec=self.spec,
                    plugins=self.plugins,
                    show_progress=False,
                    max_concurrency=self.max_concurrency,
                )
            state = outcome.state
        except Exception as exc:  # noqa: BLE001 - one failed problem must not stop the rest
            error = f"{type(exc).__name__}: {exc}"
            state = saved_state(manager.conn, run_id) if manager.registry.exists(run_id) else {}
        finally:
            manager.conn.close()
        wall = time.monotonic() - started + ((previous or {}).get("wall_s") or 0.0)
        return result_row(problem, run_id, self.spec.name, state, wall, error)

    def _append(self, row: dict[str, Any]) -> None:
        with self._lock, (self.out_dir / RESULTS).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        if self.on_row is not None:
            self.on_row(row)

    def run(self) -> dict[str, Any]:
        """Solve every problem (skipping finished ones), then write results and summary."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        prepare = connect(self.db_path)  # create the schema once, before workers connect
        RunManager(prepare)
        open_checkpointer(prepare)
        prepare.close()
        previous = self._previous_rows()
        rows: dict[str, dict[str, Any]] = {}
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {
                pool.submit(self._solve_one, p, previous.get(p.id)): p for p in self.problems
            }
            for future in as_completed(futures):
                row = future.result()
                rows[row["id"]] = row
                self._append(row)
        ordered = [rows[p.id] for p in self.problems]
        tmp = self.out_dir / f"{RESULTS}.tmp"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in ordered), encoding="utf-8")
        tmp.replace(self.out_dir / RESULTS)
        summary = {
            "graph": self.spec.name,
            "config": self.config.model_dump(mode="json"),
            "backend": self.backend.describe(),
            **summarize(ordered),
        }
        (self.out_dir / SUMMARY).write_text(json.dumps(summary, indent=2), encoding="utf-8")
        return summary
