"""``tmas eval``: a topology over a data set, one saved run per problem, resumable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from tmas.cli.common import ConcurrencyOption, DbOption, err, error_line, fail, out
from tmas.cli.database import check_database
from tmas.cli.endpoints import checked_router
from tmas.cli.model_options import ModelOptions, model_options
from tmas.cli.outcome import DEGRADED_EXIT
from tmas.cli.run_options import (
    AutoPlanOptions,
    RunOptions,
    auto_plan_options,
    planned_run,
    run_options,
)
from tmas.eval.data import load_problems
from tmas.eval.evaluation import Evaluation, EvaluationStopped
from tmas.eval.results import role_counts, summary_table
from tmas.llm.model_files import ModelFileError
from tmas.storage.sqlite import StorageError, default_db_path
from tmas.terminal import plain


class ProblemProgress:
    """One line per finished problem with the running accuracy and tokens."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total, self.quiet = total, quiet
        self.done = self.correct = self.tokens = 0

    def __call__(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.correct += int(row["correct"])
        self.tokens += row["tokens_in"] + row["tokens_out"]
        if not self.quiet:
            answer = row["selected_answer"]
            shown = repr(answer if answer is None else plain(answer, 40))
            err.print(
                f"[{self.done}/{self.total}] {plain(row['id'], 60)}: {row['status']}, answer "
                f"{shown} ({'right' if row['correct'] else 'wrong'}) | "
                f"accuracy {self.correct / self.done:.1%} | tokens {self.tokens:,}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )


@run_options()
@auto_plan_options()
@model_options()
def evaluate(
    out_dir: Annotated[Path, typer.Option("--out", help="folder for results.jsonl, summary.json")],
    data: Annotated[str, typer.Option(help="JSONL/CSV/parquet file, or gsm8k / math500")] = "gsm8k",
    limit: Annotated[int | None, typer.Option(min=1, help="first K problems only")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="problems at once")] = 1,
    *,
    run: RunOptions,
    auto: AutoPlanOptions,
    models: ModelOptions,
    max_concurrency: ConcurrencyOption = None,
    db: DbOption = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS",
            help="run problems as Ray tasks on this cluster (host:port, auto; local starts one)",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option(help="no per-problem lines")] = False,
) -> None:
    """Evaluate a topology on a data set; rerun the same command to finish an interrupted one."""
    try:
        problems = load_problems(data, limit, proof=run.proof)
        planned = planned_run(run, auto, models)
        plan, chooser = planned.plan, planned.chooser
        router = None if ray else checked_router(plan)  # Ray: their own
    except (ValueError, ModelFileError) as exc:  # data, config, spec, backend or its server
        fail(error_line(exc))
        return
    check_database(db)
    progress = ProblemProgress(len(problems), quiet)
    evaluation = Evaluation(
        problems=problems,
        plan=plan,
        router=router,
        db=db or default_db_path(),
        out_dir=out_dir,
        concurrency=concurrency,
        max_concurrency=max_concurrency,
        ray_address=ray,
        on_row=progress,
        chooser=chooser,
    )
    try:
        summary = evaluation.run()
    except (StorageError, ValueError) as exc:  # database, other settings, or the Ray cluster
        fail(str(exc))
        return
    except EvaluationStopped as exc:  # a key, a model name or a context size to fix
        fail(str(exc), 1)
        return
    title = "auto (plan reward model)" if chooser is not None else plan.name
    out.print(summary_table(summary, f"{title} on {data} ({plan.backend.describe()})"))
    out.print(f"results: {out_dir / 'results.jsonl'}", markup=False)
    if summary["failed"]:
        fail(f"{summary['failed']} problem(s) failed; rerun the same command to retry them", 1)
    if summary["degraded"]:
        lost = role_counts(summary["failed_calls_by_role"])
        fail(
            f"{summary['degraded']} problem(s) finished degraded (a role lost every call; "
            f"failed calls {lost}); the results table counts them",
            DEGRADED_EXIT,
        )
