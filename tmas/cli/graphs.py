"""``tmas graphs``: list the bundled topologies."""

from __future__ import annotations

from rich.table import Table

from tmas.cli.common import (
    out,
)
from tmas.graphs.bundled import bundled_names, load_bundled


def graphs() -> None:
    """List the bundled topologies (run one with: tmas solve --graph NAME)."""
    table = Table(title="Bundled topologies")
    table.add_column("name", no_wrap=True)
    table.add_column("description")
    for name in bundled_names():
        table.add_row(name, load_bundled(name).description)
    out.print(table)
