"""The ``tmas`` program: imports the command it runs with the garbage collector off, then
freezes what it imported.

Importing LangGraph, LangChain and a backend allocates a great many objects and frees few;
collecting while importing costs about 0.3 s on a small machine, and collecting those
objects again at exit about 0.35 s. ``gc.freeze`` moves them out of the collector's sight,
so the run itself collects only what it makes.
"""

from __future__ import annotations

import gc
import sys

# What a command that runs graphs uses (LangGraph, the model router, the run manager): loaded
# with the command, under the frozen collector, rather than mid-command at first use.
ENGINE_MODULES = ("tmas.lifecycle.manager", "tmas.llm.router", "tmas.graphs.compiler")


def command_name(argv: list[str]) -> str | None:
    """The command a command line names (its first word that is not an option).

    Example:
        >>> command_name(["solve", "2 + 2?"]), command_name(["--help"])
        ('solve', None)
    """
    return next((word for word in argv if not word.startswith("-")), None)


def main() -> None:
    """Run ``tmas`` with the arguments of this process."""
    gc.disable()
    try:
        from tmas.cli.app import TmasCommands, app

        name = command_name(sys.argv[1:])
        entry = next((e for e in TmasCommands.ENTRIES if e.name == name), None)
        if entry is not None:
            if entry.engine and "--help" not in sys.argv:
                for module in ENGINE_MODULES:
                    __import__(module)
            __import__(entry.module)
    finally:
        gc.enable()
        gc.freeze()
    app()
