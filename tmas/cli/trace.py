"""``tmas trace``: a run's reasoning flow as one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tmas.cli.common import DbOption, err, fail
from tmas.cli.database import open_manager
from tmas.storage.run_registry import UnknownRunError
from tmas.views.trace import collect_trace, render_page


def trace(
    run_id: Annotated[str, typer.Argument(help="the run to show")],
    html: Annotated[Path, typer.Option("--html", help="where to write the HTML page")],
    compare: Annotated[
        str | None, typer.Option("--compare", help="another run shown side by side")
    ] = None,
    db: DbOption = None,
) -> None:
    """Write a run's iterations, candidates, checks, banks and votes as an HTML page."""
    with open_manager(db, create=False) as manager:
        try:
            traces = [collect_trace(manager.storage, rid) for rid in [run_id, compare] if rid]
        except UnknownRunError as exc:
            fail(str(exc))
            return
    try:
        html.write_text(render_page(traces), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {html}: {exc}")
    err.print(f"wrote {html}", markup=False, highlight=False, soft_wrap=True)
