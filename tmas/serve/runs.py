"""The saved runs behind a server: one run's record for ``GET /v1/runs/{id}``, and the runs a
killed or stopped server left unfinished."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tmas.lifecycle.history import saved_state
from tmas.lifecycle.manager import RunManager
from tmas.lifecycle.run_database import open_runs
from tmas.serve.api_errors import APIError
from tmas.serve.completions import chosen_solution, openai_usage
from tmas.storage.run_registry import RunRecord, UnknownRunError

RESUMABLE = ("interrupted",)  # a kill leaves "running" with a dead process: read as interrupted


def _started_by(record: RunRecord, origin: str) -> bool:
    return record.provenance.get("origin") == origin


def run_info(db: str | Path | None, run_id: str, origin: str) -> dict[str, Any]:
    """What a client may read of a run ``origin`` started: status, answer, usage; APIError 404
    for an unknown run or one started otherwise.

    Example:
        >>> import tempfile, os
        >>> run_info(os.path.join(tempfile.mkdtemp(), "r.sqlite"), "nope", "serve")
        Traceback (most recent call last):
        ...
        tmas.serve.api_errors.APIError: no run with id 'nope'
    """
    storage = open_runs(db)
    try:
        try:
            record = storage.registry.get(run_id)
        except UnknownRunError:
            record = None
        if record is None or not _started_by(record, origin):
            raise APIError(404, f"no run with id {run_id!r}", code="run_not_found")
        state = saved_state(storage, run_id, full_history=False)
        status = RunManager(storage).status_of(record, state)
    finally:
        storage.close()
    by_role = {role: dict(counts) for role, counts in (state.get("usage") or {}).items()}
    return {
        "id": run_id,
        "object": "tmas.run",
        "created": int(record.created_at),
        "model": record.graph,
        "status": status,
        "problem": record.problem,
        "iteration": state.get("iteration", 0),
        "final_answer": state.get("final_answer"),
        "stop_reason": state.get("stop_reason"),
        "content": chosen_solution(state) if state.get("stop_reason") else None,
        "usage": openai_usage(by_role),
        "usage_by_role": by_role,
        "error": record.error,
    }


def interrupted_runs(db: str | Path | None, origin: str) -> list[str]:
    """Ids of the unfinished runs ``origin`` started whose process is gone, oldest first
    (cancelled and failed runs are left alone).

    Example:
        >>> import tempfile, os
        >>> interrupted_runs(os.path.join(tempfile.mkdtemp(), "r.sqlite"), "serve")
        []
    """
    storage = open_runs(db)
    try:
        manager = RunManager(storage)
        found = []
        for record in reversed(storage.registry.all()):
            if not _started_by(record, origin):
                continue
            state = saved_state(storage, record.run_id, full_history=False)
            if manager.status_of(record, state) in RESUMABLE:
                found.append(record.run_id)
        return found
    finally:
        storage.close()
