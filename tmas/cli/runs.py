"""``tmas runs``: list the saved runs."""

from __future__ import annotations

from tmas.cli.common import (
    DbOption,
    open_manager,
    out,
)
from tmas.cli.tables import runs_table
from tmas.lifecycle.history import saved_state


def runs(db: DbOption = None) -> None:
    """List saved runs: id, status, iterations done, answer, problem."""
    rows = []
    with open_manager(db, create=False) as manager:
        for record in manager.registry.all():
            state = saved_state(manager.storage, record.run_id, full_history=False)
            rows.append((record, state, manager.status_of(record, state)))
    out.print(runs_table(rows))
