"""Driving a run from the command line: live options, the final report, failures as exits."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from tmas.cli.common import err, fail, out
from tmas.cli.live import event_printer, terminal_reviewer
from tmas.cli.tables import iteration_table, usage_table
from tmas.lifecycle.failure_text import failure_message
from tmas.lifecycle.run_status import RunBusyError, RunOutcome
from tmas.nodes.control.selection_rules import selection_of
from tmas.terminal import plain

if TYPE_CHECKING:  # commands that drive runs pass one; showing a run needs none
    from tmas.lifecycle.manager import RunManager


def live_options(stream: bool, review: bool) -> dict[str, Any]:
    """The ``on_event`` and ``review`` arguments of a start or resume from ``--stream`` and
    ``--review``."""
    return {
        "on_event": event_printer(err) if stream else None,
        "review": terminal_reviewer(err) if review else None,
    }


def finish(
    outcome: RunOutcome,
    as_json: bool,
    verdict: bool = True,
    extra: dict[str, Any] | None = None,
) -> None:
    """Print the outcome of a run: its iteration table, model calls and answer, or JSON (model
    text never reaches the terminal raw; ``extra`` adds keys to it); with ``verdict``, a
    degraded run then exits non-zero (:func:`exit_if_degraded`)."""
    state = outcome.state
    if outcome.paused and not as_json:
        done = (state.get("history") or [{"iteration": 0}])[-1]["iteration"]
        err.print(
            f"paused after iteration {done}; continue with: tmas resume {outcome.run_id} "
            "(--review to keep reviewing)",
            markup=False,
        )
    if as_json:
        keys = ("final_answer", "selection", "stop_reason", "history", "usage", "extras")
        shown = {
            "run_id": outcome.run_id,
            **{k: state.get(k) for k in keys},
            "lost_roles": outcome.lost_roles,
            **(extra or {}),
        }
        out.print_json(json.dumps(shown), ensure_ascii=True)  # no raw control characters
    else:
        _print_outcome(outcome)
    if verdict:
        exit_if_degraded(outcome)


def _print_outcome(outcome: RunOutcome) -> None:
    state = outcome.state
    out.print(iteration_table(state))
    if state.get("usage"):
        out.print(usage_table(state["usage"]))
    answer = escape(plain(state.get("final_answer")))
    rule = escape(selection_of(state, {}))
    out.print(f"run {outcome.run_id}: answer [bold]{answer}[/] (selection {rule})", highlight=False)


DEGRADED_EXIT = 3


def exit_if_degraded(outcome: RunOutcome) -> None:
    """A run that finished although some role lost every call is no success: say which role
    lost how many calls and exit with ``DEGRADED_EXIT``."""
    if not outcome.finished or not outcome.lost_roles:
        return
    usage = outcome.state.get("usage") or {}
    lost = ", ".join(f"{role} ({usage[role]['failed_calls']} calls)" for role in outcome.lost_roles)
    fail(
        f"run {outcome.run_id} finished degraded: every call of {lost} failed; "
        "`tmas show` lists the failures",
        DEGRADED_EXIT,
    )


def _saved(manager: RunManager, run_id: str) -> bool:
    """Whether ``run_id`` is registered (False when the database cannot say)."""
    try:
        return manager.registry.exists(run_id)
    except Exception:  # noqa: BLE001 - only decides which hint to print
        return False


def drive(action: Any, run_id: str, manager: RunManager) -> RunOutcome:
    """Run ``action`` (a start or a resume), turning every failure into a message and an exit
    code; tells how to continue when the run was saved."""
    try:
        return action()
    except KeyboardInterrupt:
        if _saved(manager, run_id):
            err.print(f"\ninterrupted; continue with: tmas resume {run_id}")
        else:
            err.print("\ninterrupted before the run was saved")
        sys.stderr.flush()
        os._exit(130)
    except RunBusyError as exc:
        fail(str(exc))
    except Exception as exc:  # noqa: BLE001 - report, keep the checkpoint, exit non-zero
        message = failure_message(exc, manager.storage.location)
        if _saved(manager, run_id):
            message += f"\nthe run is saved; continue with: tmas resume {run_id}"
        fail(message, 1)
    raise AssertionError("unreachable")
