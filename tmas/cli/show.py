"""``tmas show``: one saved run's plan (backend, role bindings, channels, plugins), why it
stopped, its iterations, model calls and answer."""

from __future__ import annotations

from typing import Annotated

import typer

from tmas.cli.auto_plan import describe_choice
from tmas.cli.common import DbOption, JsonOption, fail, out
from tmas.cli.database import open_database
from tmas.cli.outcome import finish
from tmas.cli.plan_view import plan_lines, prompt_lines, state_lines
from tmas.graphs.run_plan import saved_plan
from tmas.lifecycle.history import saved_state
from tmas.lifecycle.run_status import RunOutcome, run_status
from tmas.storage.run_registry import UnknownRunError
from tmas.storage.sqlite import StorageError
from tmas.terminal import plain


def show(
    run_id: str,
    db: DbOption = None,
    as_json: JsonOption = False,
    prompts: Annotated[
        bool, typer.Option("--prompts", help="print every template the run rendered, in full")
    ] = False,
) -> None:
    """Print a run's plan, why it stopped, its iterations and its final answer: the plan's
    backend, each role's model, budget and temperature, channels, plugins, declared roles and
    overridden prompts (``--prompts``: every template the run rendered); ``--json`` includes
    the whole plan and the channels' values."""
    with open_database(db, create=False) as storage:
        try:
            record = storage.registry.get(run_id)
            plan = saved_plan(record)
        except (UnknownRunError, StorageError) as exc:
            fail(str(exc))
            return
        state = saved_state(storage, run_id)
        status = run_status(record, state)
    plan_choice = record.provenance.get("plan_choice")
    extra = {
        "roles": {n: r.model_dump() for n, r in plan.topology.roles.items()},
        "prompts": dict(plan.topology.prompts),
        **({"plan_choice": plan_choice} if plan_choice else {}),
        "plan": plan.record(),
        "channels": {name: state.get(name) for name in plan.channels},
    }
    if not as_json:
        out.print(f"problem: {plain(record.problem, 500)}", markup=False, highlight=False)
        out.print(f"topology: {record.graph}   status: {status}", markup=False)
        lines = plan_lines(plan) + state_lines(plan, state)
        if prompts:
            lines += prompt_lines(plan)
        for line in lines:  # the plan's own text: line breaks and alignment kept
            out.print(plain(line, 100_000, collapse=False), markup=False, highlight=False,
                      soft_wrap=True)  # fmt: skip
        if plan_choice:
            out.print("plans scored before the run (--graph auto):", markup=False)
            out.print(describe_choice(plan_choice), markup=False, highlight=False)
    finish(RunOutcome(run_id, state), as_json, verdict=False, extra=extra)
