"""``python -m tmas.cli``: the command line."""

from tmas.cli.entry import main

main()
