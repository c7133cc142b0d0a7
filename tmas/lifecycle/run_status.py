"""What a saved run's state says about it: its outcome, and its status from its registry row
and its last checkpoint. Plain data: commands that only list or show runs read it without
loading the engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tmas.state import lost_roles
from tmas.storage.run_registry import RunRecord


class RunBusyError(RuntimeError):
    """The run is being driven by another live process."""


@dataclass
class RunOutcome:
    """The state a run ended in and whether it finished."""

    run_id: str
    state: dict[str, Any]
    paused: bool = False  # stopped by a reviewer after an iteration; resume to go on

    @property
    def final_answer(self) -> str | None:
        """The run's answer (by its selection rule), or None."""
        return self.state.get("final_answer")

    @property
    def history(self) -> list[dict[str, Any]]:
        """Every iteration's record: answers, vote, scores, Pass@1."""
        return list(self.state.get("history") or [])

    @property
    def finished(self) -> bool:
        """True once the loop stopped (max iterations or the early-stop rule)."""
        return bool(self.state.get("stop_reason"))

    @property
    def lost_roles(self) -> list[str]:
        """Roles that lost every call of the run: a finished run with any is degraded."""
        return lost_roles(self.state.get("usage"))


def finished_status(state: dict[str, Any]) -> str | None:
    """``finished``, ``degraded`` (finished, but some role lost every call), or None for a run
    that has not finished.

    Example:
        >>> finished_status({"stop_reason": "max_iterations"}), finished_status({})
        ('finished', None)
        >>> finished_status({"stop_reason": "max_iterations",
        ...                  "usage": {"verifier": {"calls": 0, "failed_calls": 4}}})
        'degraded'
    """
    if not state.get("stop_reason"):
        return None
    return "degraded" if lost_roles(state.get("usage")) else "finished"


def run_status(record: RunRecord, state: dict[str, Any]) -> str:
    """finished / degraded / running / paused / cancelled / interrupted / failed, from the
    registry row and the last checkpoint's state.

    Example:
        >>> record = RunRecord("r", 0.0, "1+1?", None, "tmas", None, "failed")
        >>> run_status(record, {}), run_status(record, {"stop_reason": "max_iterations"})
        ('failed', 'finished')
    """
    if done := finished_status(state):
        return done
    if record.status == "running" and record.process_alive():
        return "running"
    if record.status in ("failed", "paused", "cancelled"):
        return record.status
    return "interrupted"
