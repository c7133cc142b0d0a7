"""The ``tmas`` command line: one module per command, assembled into one Typer app in
:mod:`tmas.cli.app` (``python -m tmas.cli`` runs it too)."""

from tmas.cli.app import app

__all__ = ["app"]
