"""The ``tmas`` command line: solve a problem, list, show and resume saved runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from tmas.cli_backend import checked_router
from tmas.cli_common import (
    BackendOption,
    BaseUrlOption,
    CandidatesOption,
    ConcurrencyOption,
    DbOption,
    GraphOption,
    IterationsOption,
    JsonOption,
    MaxTokensOption,
    ModelOption,
    NCtxOption,
    PluginOption,
    PromptsOption,
    ReviewOption,
    RoleBaseUrlOption,
    RoleModelOption,
    SetOption,
    StreamOption,
    ThreadsOption,
    VerificationsOption,
    err,
    error_line,
    fail,
    open_manager,
    out,
)
from tmas.cli_eval import compare, evaluate
from tmas.cli_fork import fork
from tmas.cli_graph import graph
from tmas.cli_input import (
    read_documents,
    read_problem,
    revised_settings,
    run_options,
    setup_run,
)
from tmas.cli_run import drive, finish, live_options
from tmas.cli_trace import trace
from tmas.config import TMASConfig
from tmas.graphs.bundled import bundled_names, load_bundled
from tmas.llm.model_files import ModelFileError
from tmas.report import customisation_lines, runs_table
from tmas.runner import RunOutcome, saved_state
from tmas.runs import UnknownRunError, new_run_id
from tmas.terminal import plain

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)


@app.command()
def solve(
    problem: Annotated[str, typer.Argument(help="the problem text, or - to read stdin")],
    gold: Annotated[str | None, typer.Option(help="gold answer: report Pass@1")] = None,
    graph: GraphOption = "tmas",
    plugin: PluginOption = [],  # noqa: B006
    prompts: PromptsOption = [],  # noqa: B006
    doc: Annotated[
        list[Path], typer.Option(help="a document for the question (repeatable; delm)")
    ] = [],  # noqa: B006
    n: CandidatesOption = None,
    m: VerificationsOption = None,
    iterations: IterationsOption = None,
    epsilon: float | None = None,
    seed: int | None = None,
    max_tokens: MaxTokensOption = None,
    temperature: float | None = None,
    backend: BackendOption = "llamacpp",
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    role_model: RoleModelOption = [],  # noqa: B006
    role_base_url: RoleBaseUrlOption = [],  # noqa: B006
    n_ctx: NCtxOption = 4096,
    threads: ThreadsOption = None,
    max_concurrency: ConcurrencyOption = 16,
    set_values: SetOption = [],  # noqa: B006
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
        topology, config, spec = setup_run(
            graph,
            plugin,
            run_options(n, m, iterations, epsilon, seed, max_tokens, temperature),
            set_values,
            role_model,
            role_base_url,
            dict(kind=backend, model=model, base_url=base_url, n_ctx=n_ctx, n_threads=threads),
            prompts,
        )
        router = checked_router(spec, config)
    except (ValueError, ModelFileError) as exc:  # config, spec, backend or its server
        fail(error_line(exc))
        return
    run_id = run_id or new_run_id()
    with open_manager(db, for_writing=True, router_factory=lambda *_: router) as manager:
        if manager.registry.exists(run_id):
            fail(f"a run with id {run_id!r} already exists; continue it with: tmas resume {run_id}")
        err.print(f"run {run_id} ({topology.name}, {spec.describe()})", markup=False)
        outcome = drive(
            lambda: manager.start(
                run_id,
                problem=text,
                gold_answer=gold,
                config=config,
                backend=spec,
                spec=topology,
                plugins=plugin,
                documents=documents,
                show_progress=not quiet,
                max_concurrency=max_concurrency,
                **live_options(stream, review),
            ),
            run_id,
            manager,
        )
        finish(outcome, as_json)


@app.command()
def resume(
    run_id: str,
    db: DbOption = None,
    max_concurrency: ConcurrencyOption = 16,
    quiet: bool = False,
    stream: StreamOption = False,
    review: ReviewOption = False,
    as_json: JsonOption = False,
    model: Annotated[
        str | None, typer.Option(help="continue with this main model instead (a corrected name)")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="continue against this endpoint instead (a moved server)")
    ] = None,
    role_model: RoleModelOption = [],  # noqa: B006
    role_base_url: RoleBaseUrlOption = [],  # noqa: B006
    n_ctx: Annotated[
        int | None, typer.Option(help="continue with this context window (embedded model)")
    ] = None,
) -> None:
    """Continue an interrupted or paused run from its last checkpoint, repeating no finished
    call; model options correct what stopped it (an unknown model, a moved server, a context
    too small) and are saved with the run."""
    with open_manager(db, create=False) as manager:
        try:
            record = manager.registry.get(run_id)
        except UnknownRunError as exc:
            fail(str(exc))
            return
        settings = None
        if model or base_url or role_model or role_base_url or n_ctx:
            try:
                settings = revised_settings(
                    record.config,
                    record.backend,
                    model=model,
                    base_url=base_url,
                    n_ctx=n_ctx,
                    role_models=role_model,
                    role_base_urls=role_base_url,
                )
                checked_router(settings[1], TMASConfig(**settings[0]))
            except (ValueError, ModelFileError) as exc:
                fail(error_line(exc))
                return
        outcome = drive(
            lambda: manager.resume(
                run_id,
                show_progress=not quiet,
                max_concurrency=max_concurrency,
                settings=settings,
                **live_options(stream, review),
            ),
            run_id,
            manager,
        )
        finish(outcome, as_json)


@app.command()
def runs(db: DbOption = None) -> None:
    """List saved runs: id, status, iterations done, answer, problem."""
    rows = []
    with open_manager(db, create=False) as manager:
        for record in manager.registry.all():
            state = saved_state(manager.storage, record.run_id, full_history=False)
            rows.append((record, state, manager.status_of(record, state)))
    out.print(runs_table(rows))


@app.command()
def show(
    run_id: str,
    db: DbOption = None,
    as_json: JsonOption = False,
    prompts: Annotated[
        bool, typer.Option("--prompts", help="print the run's prompt overrides in full")
    ] = False,
) -> None:
    """Print a run's per-iteration table and its final answer (and the roles it declared and
    the prompts it overrode)."""
    with open_manager(db, create=False) as manager:
        try:
            record = manager.registry.get(run_id)
        except UnknownRunError as exc:
            fail(str(exc))
            return
        state = saved_state(manager.storage, run_id)
        status = manager.status_of(record, state)
    if not as_json:
        out.print(f"problem: {plain(record.problem, 500)}", markup=False, highlight=False)
    spec = (record.topology or {}).get("spec") or {}
    customised = {"roles": spec.get("roles") or {}, "prompts": spec.get("prompts") or {}}
    if not as_json:
        out.print(f"topology: {record.graph}   status: {status}", markup=False)
        for line in customisation_lines(customised, full_prompts=prompts):
            out.print(plain(line, 100_000), markup=False, highlight=False)
    finish(RunOutcome(run_id, state), as_json, verdict=False, extra=customised)


@app.command()
def graphs() -> None:
    """List the bundled topologies (run one with: tmas solve --graph NAME)."""
    table = Table(title="Bundled topologies")
    table.add_column("name", no_wrap=True)
    table.add_column("description")
    for name in bundled_names():
        table.add_row(name, load_bundled(name).description)
    out.print(table)


app.command("eval")(evaluate)
app.command("graph")(graph)
app.command("fork")(fork)
app.command("trace")(trace)
app.command("compare")(compare)


if __name__ == "__main__":
    app()
