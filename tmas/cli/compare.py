"""``tmas compare``: evaluations side by side, with accuracy plots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tmas.cli.common import (
    fail,
    out,
)
from tmas.eval.compare import comparison_table, load_summary, write_plots
from tmas.eval.data import DataError


def compare(
    folders: Annotated[list[Path], typer.Argument(help="evaluation output folders")],
    plots: Annotated[Path | None, typer.Option(help="folder for the PNG plots")] = None,
) -> None:
    """Compare evaluations side by side; write accuracy plots (PNG, drawn offline)."""
    try:
        summaries = [load_summary(folder) for folder in folders]
    except DataError as exc:
        fail(str(exc))
        return
    out.print(comparison_table(summaries))
    for path in write_plots(summaries, plots or folders[0]):
        out.print(f"plot: {path}", markup=False)
