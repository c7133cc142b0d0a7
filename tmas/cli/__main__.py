"""``python -m tmas.cli``: the command line."""

from tmas.cli.app import app

app()
