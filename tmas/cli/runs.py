"""``tmas runs``: list the saved runs."""

from __future__ import annotations

from tmas.cli.common import DbOption, out
from tmas.cli.database import open_database
from tmas.cli.tables import runs_table
from tmas.lifecycle.history import saved_state
from tmas.lifecycle.run_status import run_status


def runs(db: DbOption = None) -> None:
    """List saved runs: id, status, iterations done, answer, problem."""
    rows = []
    with open_database(db, create=False) as storage:
        for record in storage.registry.all():
            state = saved_state(storage, record.run_id, full_history=False)
            rows.append((record, state, run_status(record, state)))
    out.print(runs_table(rows))
