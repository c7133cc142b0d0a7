"""What to tell a user about a run that failed: one message, whoever drives the run (the
command line, the server)."""

from __future__ import annotations

import sqlite3

from tmas.llm.errors import ModelCallError
from tmas.llm.model_files import ModelFileError
from tmas.storage.sqlite import StorageError, describe_database_error


def failure_message(exc: BaseException, location: str) -> str:
    """What to print for a run that failed with ``exc`` (the run database is at ``location``).

    Example:
        >>> failure_message(RuntimeError("boom"), "runs.sqlite")
        'RuntimeError: boom'
        >>> error = ValueError("boom")
        >>> error.add_note("at node update_banks (update_banks)")
        >>> failure_message(error, "runs.sqlite")
        'boom; at node update_banks (update_banks)'
        >>> failure_message(sqlite3.DatabaseError("database disk image is malformed"), "r.sqlite")
        'run database r.sqlite is damaged or not a run database: database disk image is malformed'
    """
    if isinstance(exc, sqlite3.DatabaseError):
        return describe_database_error(exc, location)
    if isinstance(exc, ModelFileError | ValueError | StorageError | ModelCallError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    notes = [
        note
        for note in getattr(exc, "__notes__", None) or []
        if not note.startswith("During task with name")
    ]  # LangGraph's note: ours names the node (node_guard)
    return "; ".join([text, *notes])
