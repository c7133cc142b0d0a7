"""Running a topology over many problems: one saved run per problem, resumable as a whole.

Each problem is its own run (thread) in the run database, with an id derived from the output
folder and the problem id, so the same command run again skips finished problems and resumes
unfinished ones from their checkpoints; a folder moved or copied with its database keeps its
runs (each results row names its run). Problems run concurrently: in threads of this process
sharing one set of models, or as Ray tasks on a cluster (``ray_address``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from tmas.answers.grading import start_grading_early
from tmas.eval.data import Problem
from tmas.eval.identity import (
    EvaluationMismatch,
    check_identity,
    evaluation_identity,
    read_identity,
    write_identity,
)
from tmas.eval.job import (
    ProblemJob,
    eval_run_id,
    settings_mismatch,
    solve_concurrently,
    solve_problem,
)
from tmas.eval.results import ANSWERED, summarize
from tmas.graphs.compiler import compile_plan
from tmas.graphs.run_plan import RunPlan, plan_router, plan_run, saved_plan
from tmas.lifecycle.run_database import open_runs
from tmas.llm.router import ModelRouter
from tmas.storage import is_database_url

RESULTS = "results.jsonl"
SUMMARY = "summary.json"


class EvaluationStopped(RuntimeError):
    """A problem failed for a reason no retry can fix (a rejected key, an unknown model, a
    prompt that cannot fit): the evaluation started no further problem."""


@dataclass
class Evaluation:
    """One evaluation: what runs, on what, where results go.

    Every problem runs by ``plan`` (:func:`tmas.graphs.run_plan.plan_run`). ``db`` is a
    SQLite path or a ``postgresql://`` URL; on a Ray cluster of several machines it must be a
    URL every node can reach.
    """

    problems: list[Problem]
    plan: RunPlan
    router: ModelRouter | None = None
    db: str | Path = ""
    out_dir: Path = Path()
    concurrency: int = 1
    max_concurrency: int | None = None
    ray_address: str | None = None
    on_row: Callable[[dict[str, Any]], None] | None = None
    chooser: Any = None
    """A :class:`tmas.orchrm.choice.PlanChooser` (``--graph auto``): each problem runs the plan
    it chooses; ``plan`` then stands for the run's backend, seed, role settings and plugins
    (its topology is the first of the space's)."""
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

    def _plan_for(self, problem: Problem, run_id: str, storage: Any) -> dict[str, Any]:
        """The run plan and plan choice of one problem's run under ``--graph auto``: the saved
        ones when the run exists (a rerun never chooses again), else the chooser's."""
        if storage.registry.exists(run_id):
            record = storage.registry.get(run_id)
            return {"plan": saved_plan(record), "plan_choice": record.provenance.get("plan_choice")}
        choice = self.chooser.choose(problem.problem)
        return {"plan": self.chosen_plan(choice.chosen), "plan_choice": choice.record()}

    def chosen_plan(self, chosen: Any) -> RunPlan:
        """The run plan of an orchestration plan the chooser picked: its topology and settings
        with this evaluation's seed and role settings, on its backend and plugins."""
        given = {"seed": self.plan.config.seed, "roles": self.plan.config.roles}
        return plan_run(chosen.spec, [chosen.config, given], self.plan.backend,
                        self.plan.plugin_refs())  # fmt: skip

    def _moved(self, previous: dict[str, dict[str, Any]]) -> bool:
        """Whether a saved row names a run id other than the folder's own (the folder was
        moved or copied since it ran)."""
        return any(
            row.get("run_id") not in (None, eval_run_id(self.out_dir, problem_id))
            for problem_id, row in previous.items()
        )

    def _run_id(self, problem: Problem, previous: dict[str, dict[str, Any]], storage: Any) -> str:
        """The problem's run: the one its saved row names when the database holds it (a
        folder moved or copied with its database keeps its runs), else the folder's own id."""
        saved = (previous.get(problem.id) or {}).get("run_id")
        if saved and storage is not None and storage.registry.exists(saved):
            return str(saved)
        return eval_run_id(self.out_dir, problem.id)

    def _jobs(self, previous: dict[str, dict[str, Any]]) -> list[ProblemJob]:
        db = self.db if is_database_url(self.db) else str(Path(self.db).resolve())
        reading = self.chooser is not None or self._moved(previous)
        storage = open_runs(self.db) if reading else None
        jobs = []
        try:
            for problem in self.problems:
                run_id = self._run_id(problem, previous, storage)
                plan = {"plan": self.plan, "plan_choice": None}
                if self.chooser is not None:
                    plan = self._plan_for(problem, run_id, storage)
                jobs.append(
                    ProblemJob(
                        problem=problem,
                        run_id=run_id,
                        db=str(db),
                        max_concurrency=self.max_concurrency,
                        previous_wall_s=(previous.get(problem.id) or {}).get("wall_s"),
                        **plan,
                    )
                )
        finally:
            if storage is not None:
                storage.close()
        return jobs

    def _rows(self, jobs: list[ProblemJob], stop: threading.Event) -> Iterator[dict[str, Any]]:
        """Each job's results row as it finishes; once ``stop`` is set no job starts."""
        if self.ray_address:
            from tmas.eval.ray_pool import run_on_ray

            yield from run_on_ray(jobs, self.ray_address, self.concurrency, stop.is_set)
            return

        tasks = [partial(solve_problem, job, self.router) for job in jobs]
        for _, row in solve_concurrently(tasks, self.concurrency, stop):
            yield row

    def _prepare_saved_runs(self, jobs: list[ProblemJob], *, correct: bool, check: bool) -> None:
        """With ``correct``, give the saved runs this evaluation's (corrected) model settings;
        with ``check``, refuse a folder whose saved runs were made with other settings."""
        storage = open_runs(self.db)
        try:
            for job in jobs:
                if not storage.registry.exists(job.run_id):
                    continue
                if correct:
                    storage.registry.set_plan(job.run_id, job.plan.record())
                elif check and (reason := settings_mismatch(storage.registry.get(job.run_id), job)):
                    raise EvaluationMismatch(f"{self.out_dir}: {reason}")
        finally:
            storage.close()

    def _check_compiles(self) -> None:
        """Build the topology once with this evaluation's settings, so an unknown node
        parameter, planner or selection rule is refused before anything is saved."""
        router = self.router or plan_router(self.plan)
        space = getattr(self.chooser, "space", None)
        for choice in space.plans if space is not None else ():
            compile_plan(self.chosen_plan(choice), router)
        if self.chooser is None:
            compile_plan(self.plan, router)

    def identity(self) -> dict[str, Any]:
        """Everything that determines this evaluation's results (:mod:`tmas.eval.identity`);
        under ``--graph auto`` the plans, the reward model and K stand for the one spec."""
        identity = evaluation_identity(self.plan)
        if self.chooser is None:
            return identity
        kept = ("backend", "models", "plugins", "about")
        return {
            **{key: identity[key] for key in kept},
            "graph": "auto",
            "config": {"seed": self.plan.config.seed},
            "auto": self.chooser.identity(),
        }

    def _append(self, row: dict[str, Any]) -> None:
        with self._lock, (self.out_dir / RESULTS).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        if self.on_row is not None:
            self.on_row(row)

    def prepare(self) -> list[ProblemJob]:
        """Check this evaluation against its folder and return one job per problem (finished
        ones report their saved result when solved): the first half of :meth:`run`, for a
        caller that schedules the jobs itself (a study interleaves several evaluations).

        Refuses (``EvaluationMismatch``) a folder that holds results of other settings, and
        settings its topology cannot be built with."""
        identity = self.identity()
        self._check_compiles()
        previous = self._previous_rows()
        answered = any(row.get("status") in ANSWERED for row in previous.values())
        correcting = check_identity(self.out_dir, identity, answered=answered)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        jobs = self._jobs(previous)
        open_runs(self.db).close()  # create (or upgrade) the schema once, before workers connect
        legacy = bool(previous) and read_identity(self.out_dir) is None  # saved before identities
        if correcting or legacy:
            self._prepare_saved_runs(jobs, correct=correcting, check=legacy)
        write_identity(self.out_dir, identity)
        return jobs

    def solve(self, job: ProblemJob) -> dict[str, Any]:
        """Solve (or report) one prepared job and append its row to the results file."""
        row = solve_problem(job, self.router)
        self._append(row)
        return row

    def mark_stopped(self, error: str) -> None:
        """Record in the folder's identity that the evaluation stopped on ``error`` (a fatal
        model error), so a rerun may correct the model settings the error names."""
        write_identity(self.out_dir, {**self.identity(), "stopped": error})

    def finish(self, rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Write the results (in problem order) and the summary from each problem's row
        (``rows`` by problem id), or raise ``EvaluationStopped`` when a row says a problem
        failed for a reason no retry can fix: the second half of :meth:`run`."""
        fatal = [row for row in rows.values() if row.get("fatal")]
        if fatal:
            self.mark_stopped(fatal[0]["error"])
            waiting = len(self.problems) - len(rows)
            raise EvaluationStopped(
                f"evaluation stopped: {fatal[0]['error']}; fix the cause and rerun the same "
                "command (corrected --model, --base-url, --role-model, --role-base-url or "
                "--n-ctx are accepted while no problem has finished) "
                f"({waiting} problem(s) not started, every saved run resumes)"
            )
        ordered = [rows[p.id] for p in self.problems]
        tmp = self.out_dir / f"{RESULTS}.tmp"
        tmp.write_text("".join(json.dumps(r) + "\n" for r in ordered), encoding="utf-8")
        tmp.replace(self.out_dir / RESULTS)
        summary = {
            "graph": "auto" if self.chooser is not None else self.plan.name,
            "config": self.plan.config.model_dump(mode="json"),
            "backend": self.plan.backend.describe(),
            **summarize(ordered),
            "identity": self.identity(),
        }
        (self.out_dir / SUMMARY).write_text(json.dumps(summary, indent=2), encoding="utf-8")
        return summary

    def run(self) -> dict[str, Any]:
        """Solve every problem (skipping finished ones), then write results and summary.

        Refuses (``EvaluationMismatch``) a folder that holds results of other settings, and
        settings its topology cannot be built with; stops starting problems once one failed
        for a reason no retry can fix (``EvaluationStopped``), keeping every run resumable.
        After such a stop, and before any problem finished, a rerun may correct the model
        settings: the saved runs take them."""
        jobs = self.prepare()
        if any(problem.answer for problem in self.problems):
            start_grading_early()
        rows: dict[str, dict[str, Any]] = {}
        stop = threading.Event()
        for row in self._rows(jobs, stop):
            rows[row["id"]] = row
            self._append(row)
            if row.get("fatal"):
                stop.set()
        return self.finish(rows)
