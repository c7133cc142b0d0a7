"""The ``tmas`` command line: solve a problem, list, show and resume saved runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from tmas.checkpoint import StorageError, connect, default_db_path
from tmas.config import ConfigError, RoleModel, load_config
from tmas.llm.backend import BackendSpec
from tmas.llm.model_files import ModelFileError
from tmas.report import iteration_table, runs_table
from tmas.runner import RunManager, RunOutcome, saved_state
from tmas.runs import UnknownRunError, new_run_id

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
out = Console()
err = Console(stderr=True)

DbOption = Annotated[
    Path | None, typer.Option("--db", help="run database (default $TMAS_HOME/runs.sqlite)")
]
MAX_PROBLEM_CHARS = 100_000


def fail(message: str, code: int = 2) -> None:
    """Print an error and exit non-zero."""
    err.print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(code)


def open_manager(db: Path | None) -> RunManager:
    try:
        return RunManager(connect(db or default_db_path()))
    except StorageError as exc:
        fail(str(exc))
        raise  # unreachable


def parse_role_options(values: list[str], field: str) -> dict[str, dict[str, Any]]:
    """``role=value`` pairs into per-role settings.

    Example:
        >>> parse_role_options(["verifier=m2"], "model")
        {'verifier': {'model': 'm2'}}
    """
    parsed: dict[str, dict[str, Any]] = {}
    for item in values:
        role, sep, value = item.partition("=")
        if not sep or not value:
            raise ConfigError(f"expected ROLE=VALUE, got {item!r}")
        parsed.setdefault(role.strip(), {})[field] = value.strip()
    return parsed


def parse_settings(items: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` pairs (values are checked and converted by the config model).

    Example:
        >>> parse_settings(["epsilon=0.5"])
        {'epsilon': '0.5'}
    """
    settings: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected KEY=VALUE, got {item!r}")
        settings[key.strip()] = value.strip()
    return settings


def read_problem(problem: str) -> str:
    text = sys.stdin.read() if problem == "-" else problem
    if not text.strip():
        raise ConfigError("the problem is empty")
    if len(text) > MAX_PROBLEM_CHARS:
        raise ConfigError(
            f"the problem is {len(text):,} characters; the limit is {MAX_PROBLEM_CHARS:,}"
        )
    return text.strip()


def finish(outcome: RunOutcome, as_json: bool) -> None:
    state = outcome.state
    if as_json:
        import json

        keys = ("final_answer", "stop_reason", "history", "usage")
        out.print_json(json.dumps({"run_id": outcome.run_id, **{k: state.get(k) for k in keys}}))
        return
    out.print(iteration_table(state))
    out.print(f"run {outcome.run_id}: answer [bold]{escape(str(state.get('final_answer')))}[/]")


def drive(action: Any, run_id: str, manager: RunManager) -> RunOutcome:
    """Run ``action`` (a start or a resume), turning every failure into a message and an exit
    code; tells how to continue when the run was saved."""
    try:
        return action()
    except KeyboardInterrupt:
        err.print(f"\ninterrupted; continue with: tmas resume {run_id}")
        sys.stderr.flush()
        os._exit(130)
    except Exception as exc:  # noqa: BLE001 - report, keep the checkpoint, exit non-zero
        known = isinstance(exc, ModelFileError | ValueError | StorageError)
        message = str(exc) if known else f"{type(exc).__name__}: {exc}"
        if manager.registry.exists(run_id):
            message += f"\nthe run is saved; continue with: tmas resume {run_id}"
        fail(message, 1)
    raise AssertionError("unreachable")


@app.command()
def solve(
    problem: Annotated[str, typer.Argument(help="the problem text, or - to read stdin")],
    gold: Annotated[
        str | None, typer.Option(help="gold answer: report Pass@1 per iteration")
    ] = None,
    n: Annotated[int, typer.Option("-n", "--candidates", help="N solutions per iteration")] = 4,
    m: Annotated[int, typer.Option("-m", "--verifications", help="M checks per candidate")] = 2,
    iterations: Annotated[int, typer.Option("-t", "--iterations")] = 3,
    epsilon: float = 0.2,
    seed: int = 0,
    max_tokens: Annotated[int, typer.Option(help="solver answer length limit")] = 512,
    temperature: float = 0.7,
    backend: Annotated[str, typer.Option(help="llamacpp | openai | vllm")] = "llamacpp",
    model: Annotated[
        str | None,
        typer.Option(help="GGUF path, qwen or smollm2 (llamacpp); model name (openai, vllm)"),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint, e.g. a vllm serve URL")
    ] = None,
    role_model: Annotated[list[str], typer.Option(help="ROLE=MODEL override (repeatable)")] = [],  # noqa: B006
    role_base_url: Annotated[list[str], typer.Option(help="ROLE=URL override (repeatable)")] = [],  # noqa: B006
    n_ctx: Annotated[int, typer.Option(help="context window of the embedded model")] = 4096,
    threads: Annotated[int | None, typer.Option(help="CPU threads of the embedded model")] = None,
    max_concurrency: Annotated[int, typer.Option(help="parallel LLM calls at most")] = 16,
    set_values: Annotated[
        list[str], typer.Option("--set", help="KEY=VALUE for any config field (repeatable)")
    ] = [],  # noqa: B006
    run_id: Annotated[str | None, typer.Option(help="id of the new run (default: random)")] = None,
    db: DbOption = None,
    quiet: Annotated[bool, typer.Option(help="no progress display")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Run the TMAS loop on one problem and print the selected answer."""
    if base_url and backend == "llamacpp":
        backend = "openai"
    try:
        text = read_problem(problem)
        roles = parse_role_options(role_model, "model")
        for role, values in parse_role_options(role_base_url, "base_url").items():
            roles.setdefault(role, {}).update(values)
        values: dict[str, Any] = dict(
            n_candidates=n,
            n_verifications=m,
            max_iterations=iterations,
            epsilon=epsilon,
            seed=seed,
            solver_max_tokens=max_tokens,
            temperature=temperature,
            roles={role: RoleModel(**settings) for role, settings in roles.items()},
        )
        values.update(parse_settings(set_values))
        config = load_config(**values)
        spec = BackendSpec(
            kind=backend, model=model, base_url=base_url, n_ctx=n_ctx, n_threads=threads
        )
    except (ConfigError, ValueError) as exc:
        fail(str(exc))
        return
    manager = open_manager(db)
    run_id = run_id or new_run_id()
    if manager.registry.exists(run_id):
        fail(f"a run with id {run_id!r} already exists; continue it with: tmas resume {run_id}")
    err.print(f"run {run_id} ({spec.describe()})", markup=False)
    outcome = drive(
        lambda: manager.start(
            run_id,
            problem=text,
            gold_answer=gold,
            config=config,
            backend=spec,
            show_progress=not quiet,
            max_concurrency=max_concurrency,
        ),
        run_id,
        manager,
    )
    finish(outcome, as_json)


@app.command()
def resume(
    run_id: str,
    db: DbOption = None,
    max_concurrency: Annotated[int, typer.Option(help="parallel LLM calls at most")] = 16,
    quiet: bool = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Continue an interrupted run from its last checkpoint, repeating no finished call."""
    manager = open_manager(db)
    try:
        manager.registry.get(run_id)
    except UnknownRunError as exc:
        fail(str(exc))
    outcome = drive(
        lambda: manager.resume(run_id, show_progress=not quiet, max_concurrency=max_concurrency),
        run_id,
        manager,
    )
    finish(outcome, as_json)


@app.command()
def runs(db: DbOption = None) -> None:
    """List saved runs: id, status, iterations done, answer, problem."""
    manager = open_manager(db)
    rows = []
    for record in manager.registry.all():
        state = saved_state(manager.conn, record.run_id)
        rows.append((record, state, manager.status_of(record, state)))
    out.print(runs_table(rows))


@app.command()
def show(
    run_id: str, db: DbOption = None, as_json: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """Print a run's per-iteration table and its final answer."""
    manager = open_manager(db)
    try:
        record = manager.registry.get(run_id)
    except UnknownRunError as exc:
        fail(str(exc))
        return
    state = saved_state(manager.conn, run_id)
    out.print(f"problem: {escape(record.problem[:500])}")
    out.print(f"status: {manager.status_of(record, state)}")
    finish(RunOutcome(run_id, state), as_json)


if __name__ == "__main__":
    app()
