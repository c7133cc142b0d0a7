"""What the command-line modules share: consoles, common options, failing with a message."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

out = Console()
err = Console(stderr=True)

DbOption = Annotated[
    Path | None, typer.Option("--db", help="run database (default $TMAS_HOME/runs.sqlite)")
]
ConcurrencyOption = Annotated[int, typer.Option(min=1, help="parallel LLM calls at most")]
JsonOption = Annotated[bool, typer.Option("--json", help="print the result as JSON")]


def fail(message: str, code: int = 2) -> None:
    """Print an error and exit non-zero."""
    err.print(f"[red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)
