"""``tmas show``: one saved run's iterations, model calls, roles, prompts and answer."""

from __future__ import annotations

from typing import Annotated

import typer

from tmas.cli.auto_plan import describe_choice
from tmas.cli.common import (
    DbOption,
    JsonOption,
    fail,
    open_manager,
    out,
)
from tmas.cli.outcome import finish
from tmas.cli.tables import customisation_lines, plan_lines
from tmas.graphs.run_plan import saved_plan
from tmas.lifecycle.history import saved_state
from tmas.lifecycle.manager import RunOutcome
from tmas.storage.run_registry import UnknownRunError
from tmas.terminal import plain


def show(
    run_id: str,
    db: DbOption = None,
    as_json: JsonOption = False,
    prompts: Annotated[
        bool, typer.Option("--prompts", help="print the run's prompt overrides in full")
    ] = False,
) -> None:
    """Print a run's per-iteration table and its final answer, with its plan (backend, models,
    channels, plugins), the roles it declared and the prompts it overrode; ``--json`` includes
    the whole plan."""
    with open_manager(db, create=False) as manager:
        try:
            record = manager.registry.get(run_id)
        except UnknownRunError as exc:
            fail(str(exc))
            return
        state = saved_state(manager.storage, run_id)
        status = manager.status_of(record, state)
        plan = saved_plan(record.plan, record.config, record.backend, record.topology)
    if not as_json:
        out.print(f"problem: {plain(record.problem, 500)}", markup=False, highlight=False)
    spec = (record.topology or {}).get("spec") or {}
    customised = {"roles": spec.get("roles") or {}, "prompts": spec.get("prompts") or {}}
    plan_choice = (record.topology or {}).get("plan_choice")
    if plan_choice:
        customised["plan_choice"] = plan_choice
    customised["plan"] = plan.record()
    if not as_json:
        out.print(f"topology: {record.graph}   status: {status}", markup=False)
        for line in plan_lines(plan) + customisation_lines(customised, full_prompts=prompts):
            out.print(plain(line, 100_000), markup=False, highlight=False, soft_wrap=True)
        if plan_choice:
            out.print("plans scored before the run (--graph auto):", markup=False)
            out.print(describe_choice(plan_choice), markup=False, highlight=False)
    finish(RunOutcome(run_id, state), as_json, verdict=False, extra=customised)
