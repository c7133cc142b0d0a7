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
from tmas.eval.study_report import read_report


def compare(
    folders: Annotated[list[Path], typer.Argument(help="evaluation or study output folders")],
    plots: Annotated[Path | None, typer.Option(help="folder for the PNG plots")] = None,
) -> None:
    """Compare evaluations side by side; write accuracy plots (PNG, drawn offline). A study's
    folder (``tmas study``) prints its report."""
    studies = {folder: read_report(folder) for folder in folders}
    for text in filter(None, studies.values()):
        out.print(text, markup=False, highlight=False, soft_wrap=True)
    folders = [folder for folder, text in studies.items() if text is None]
    if not folders:
        return
    try:
        summaries = [load_summary(folder) for folder in folders]
    except DataError as exc:
        fail(str(exc))
        return
    out.print(comparison_table(summaries))
    for path in write_plots(summaries, plots or folders[0]):
        out.print(f"plot: {path}", markup=False)
