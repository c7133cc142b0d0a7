"""``tmas fork``: continue a run from the end of one of its iterations with other settings."""

from __future__ import annotations

from typing import Annotated

import typer

from tmas.cli.common import (
    ConcurrencyOption,
    DbOption,
    JsonOption,
    ReviewOption,
    SetOption,
    StreamOption,
    err,
    fail,
)
from tmas.cli.database import open_manager, require_rebuildable
from tmas.cli.inputs import parse_pairs, parse_value
from tmas.cli.outcome import drive, finish, live_options
from tmas.lifecycle.fork import ForkError, fork_run
from tmas.storage.run_registry import UnknownRunError, new_run_id


def fork(
    parent: Annotated[str, typer.Argument(metavar="RUN_ID", help="the run to fork")],
    iteration: Annotated[
        int, typer.Option("--iteration", min=1, help="start after this iteration of RUN_ID")
    ],
    set_values: SetOption = [],  # noqa: B006
    run_id: Annotated[str | None, typer.Option(help="id of the new run (default: random)")] = None,
    db: DbOption = None,
    max_concurrency: ConcurrencyOption = None,
    quiet: Annotated[bool, typer.Option(help="no progress display")] = False,
    stream: StreamOption = False,
    review: ReviewOption = False,
    as_json: JsonOption = False,
) -> None:
    """Start a new run from RUN_ID's state after --iteration K, with --set changes."""
    with open_manager(db, create=False) as manager:
        try:
            pairs = parse_pairs(set_values, "--set")
            updates = {key: parse_value(value) for key, value in pairs}
            new_id = run_id or new_run_id()
            call = f"tmas.fork({parent!r}, iteration={iteration}, llm=MODEL)"
            require_rebuildable(manager.registry.get(parent), call)
            fork_run(manager, parent, iteration, new_id, updates)
        except (UnknownRunError, ValueError) as exc:  # includes ForkError and bad --set values
            fail(str(exc))
            return
        err.print(f"run {new_id} forked from {parent} after iteration {iteration}", markup=False)
        outcome = drive(
            lambda: manager.resume(
                new_id,
                show_progress=not quiet,
                max_concurrency=max_concurrency,
                **live_options(stream, review),
            ),
            new_id,
            manager,
        )
        finish(outcome, as_json)


__all__ = ["ForkError", "fork"]
