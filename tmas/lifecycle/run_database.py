"""Opening a run database as every part of the package does: runs saved before runs kept
their plans are given one the first time (:func:`tmas.graphs.run_plan.legacy_plan`)."""

from __future__ import annotations

from pathlib import Path

from tmas.graphs.run_plan import legacy_plan
from tmas.storage import Storage, open_storage


def open_runs(target: str | Path | None = None, *, for_writing: bool = False) -> Storage:
    """The run database at ``target`` (:func:`tmas.storage.open_storage`), upgraded once where
    it holds runs saved before plans.

    Example:
        >>> import tempfile, os
        >>> storage = open_runs(os.path.join(tempfile.mkdtemp(), "runs.sqlite"))
        >>> storage.registry.all()
        []
        >>> storage.close()
    """
    return open_storage(target, for_writing=for_writing, upgrade=legacy_plan)
