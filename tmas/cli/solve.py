"""``tmas solve``: run a topology on one problem and print the answer."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tmas.cli.common import (
    ConcurrencyOption,
    DbOption,
    JsonOption,
    ReviewOption,
    StreamOption,
    err,
    error_line,
    fail,
)
from tmas.cli.database import open_manager
from tmas.cli.endpoints import checked_router
from tmas.cli.inputs import proof_reference, read_documents, read_problem
from tmas.cli.model_options import ModelOptions, model_options
from tmas.cli.outcome import drive, finish, live_options
from tmas.cli.run_options import (
    AutoPlanOptions,
    RunOptions,
    auto_plan_options,
    choice_lines,
    planned_run,
    run_options,
)
from tmas.llm.model_files import ModelFileError
from tmas.storage.run_registry import new_run_id


@run_options()
@auto_plan_options()
@model_options()
def solve(
    problem: Annotated[str, typer.Argument(help="the problem text, or - to read stdin")],
    gold: Annotated[str | None, typer.Option(help="gold answer: report Pass@1")] = None,
    doc: Annotated[
        list[Path], typer.Option(help="a document for the question (repeatable; delm)")
    ] = [],  # noqa: B006
    reference: Annotated[
        Path | None,
        typer.Option(help="proof problems: a file holding a reference proof the judge grades with"),
    ] = None,
    *,
    run: RunOptions,
    auto: AutoPlanOptions,
    models: ModelOptions,
    max_concurrency: ConcurrencyOption = None,
    run_id: Annotated[str | None, typer.Option(help="id of the new run (default: random)")] = None,
    db: DbOption = None,
    quiet: Annotated[bool, typer.Option(help="no progress display")] = False,
    stream: StreamOption = False,
    review: ReviewOption = False,
    as_json: JsonOption = False,
) -> None:
    """Run a reasoning topology (TMAS by default) on one problem and print the answer."""
    try:
        text = read_problem(problem)
        documents = read_documents(doc)
        gold = proof_reference(run.proof, gold, reference)
        planned = planned_run(run, auto, models, problem=text)
        if (lines := choice_lines(planned)) is not None:
            err.print(lines, markup=False)
        plan = planned.plan
        router = checked_router(plan)
    except (ValueError, ModelFileError) as exc:  # config, spec, backend or its server
        fail(error_line(exc))
        return
    run_id = run_id or new_run_id()
    with open_manager(db, for_writing=True, router_factory=lambda _: router) as manager:
        if manager.registry.exists(run_id):
            fail(f"a run with id {run_id!r} already exists; continue it with: tmas resume {run_id}")
        err.print(f"run {run_id} ({plan.name}, {plan.backend.describe()})", markup=False)
        outcome = drive(
            lambda: manager.start(
                run_id,
                problem=text,
                gold_answer=gold,
                plan=plan,
                documents=documents,
                plan_choice=planned.plan_choice,
                show_progress=not quiet,
                max_concurrency=max_concurrency,
                **live_options(stream, review),
            ),
            run_id,
            manager,
        )
        finish(outcome, as_json)
