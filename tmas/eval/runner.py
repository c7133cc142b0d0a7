"""Running a topology over many problems: one saved run per problem, resumable as a whole.

Each problem is its own run (thread) in the run database, with an id derived from the output
folder and the problem id, so the same command run again skips finished problems and resumes
unfinished ones from their checkpoints. Problems run concurrently: in threads of this process
sharing one set of models, or as Ray tasks on a cluster (``ray_address``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tmas.config import TMASConfig
from tmas.eval.data import Problem
from tmas.eval.job import ProblemJob, eval_run_id, solve_problem
from tmas.eval.report import summarize
from tmas.graphs.spec import GraphSpec
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.storage import is_database_url, open_storage

RESULTS = "results.jsonl"
SUMMARY = "summary.json"


@dataclass
class Evaluation:
    """One evaluation: what runs, on what, where results go.

    ``db`` is a SQLite path or a ``postgresql://`` URL; on a Ray cluster of several machines
    it must be a URL every node can reach.
    """

    problems: list[Problem]
    spec: GraphSpec
    config: TMASConfig
    backend: BackendSpec
    router: ModelRouter | None
    db: str | Path
    out_dir: Path
    plugins: list[str] = field(default_factory=list)
    concurrency: int = 1
    max_concurrency: int = 16
    ray_address: str | None = None
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

    def _jobs(self, previous: dict[str, dict[str, Any]]) -> list[ProblemJob]:
        db = self.db if is_database_url(self.db) else str(Path(self.db).resolve())
        return [
            ProblemJob(
                problem=problem,
                run_id=eval_run_id(self.out_dir, problem.id),
                spec=self.spec,
                config=self.config,
                backend=self.backend,
                db=str(db),
                plugins=tuple(self.plugins),
                max_concurrency=self.max_concurrency,
                previous_wall_s=(previous.get(problem.id) or {}).get("wall_s"),
            )
            for problem in self.problems
        ]

    def _rows(self, jobs: list[ProblemJob]) -> Iterator[dict[str, Any]]:
        if self.ray_address:
            from tmas.eval.ray_pool import run_on_ray

            yield from run_on_ray(jobs, self.ray_address, self.concurrency)
            return
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = [pool.submit(solve_problem, job, self.router) for job in jobs]
            for future in as_completed(futures):
                yield future.result()

    def _append(self, row: dict[str, Any]) -> None:
        with self._lock, (self.out_dir / RESULTS).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        if self.on_row is not None:
            self.on_row(row)

    def run(self) -> dict[str, Any]:
        """Solve every problem (skipping finished ones), then write results and summary."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        open_storage(self.db).close()  # create the schema once, before workers connect
        rows: dict[str, dict[str, Any]] = {}
        for row in self._rows(self._jobs(self._previous_rows())):
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
