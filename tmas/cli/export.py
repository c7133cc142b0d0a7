"""``tmas export rollouts``: saved runs as RL training rows (verl parquet or JSONL)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tmas.cli.common import DbOption, err, fail
from tmas.cli.database import open_manager
from tmas.storage.run_registry import UnknownRunError
from tmas.training.data_files import DataFileError, check_suffix, write_rows
from tmas.training.rollouts import export_runs

export_app = typer.Typer(no_args_is_help=True, help="Export saved runs for training.")


def run_ids_of(items: list[str]) -> list[str]:
    """Run ids named directly, or read from an evaluation folder's ``results.jsonl``.

    Example:
        >>> run_ids_of(["a1b2c3"])
        ['a1b2c3']
    """
    found: list[str] = []
    for item in items:
        results = Path(item) / "results.jsonl"
        if Path(item).is_dir():
            if not results.is_file():
                raise ValueError(f"{item} is a folder without results.jsonl (not an evaluation)")
            for line in results.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    run_id = json.loads(line).get("run_id")
                    if run_id:
                        found.append(run_id)
        else:
            found.append(item)
    return found


@export_app.command("rollouts")
def rollouts(
    sources: Annotated[list[str], typer.Argument(help="run ids or evaluation folders")],
    out_path: Annotated[Path, typer.Option("--out", help="data.parquet or data.jsonl")],
    db: DbOption = None,
) -> None:
    """One training row per solver call: its exact messages, _source (initial: normal,
    exploit: experience, explore: guideline), the gold answer and the banks it was given."""
    try:
        check_suffix(out_path)
        run_ids = run_ids_of(sources)
    except (DataFileError, ValueError) as exc:
        fail(str(exc))
        return
    with open_manager(db, create=False) as manager:
        try:
            export = export_runs(manager.storage, run_ids)
        except UnknownRunError as exc:
            fail(str(exc).strip("'\""))
            return
    if not export.rows:
        fail(f"nothing to export: {export.describe()}", 1)
    try:
        write_rows(export.rows, out_path)
    except (DataFileError, OSError) as exc:
        fail(f"cannot write {out_path}: {exc}")
    err.print(f"{export.describe()} -> {out_path}", markup=False)
