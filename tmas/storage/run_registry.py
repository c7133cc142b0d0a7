"""The run registry: one row per run beside the checkpoints, in the same database.

Checkpoints hold the state; the registry holds what is needed to list runs and to rebuild a
run's graph on resume: the problem and the run's plan (its topology, config, backend, role
bindings, roles, channels, templates and plugins - never API keys), and how the run came to be.
Runs saved before runs kept plans get theirs once, when their database is opened.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tmas.storage.sql import SqlConnection, SqliteSql
from tmas.storage.sqlite import StorageError

_SCHEMA = """
create table if not exists tmas_runs (
    run_id text primary key,
    created_at double precision not null,
    problem text not null,
    gold_answer text,
    graph text not null,
    parent_run_id text,
    status text not null,
    error text,
    pid integer,
    documents_json text,
    host text,
    pid_started bigint,
    plan_json text,
    provenance_json text
)
"""
_COLUMNS = (
    "run_id",
    "created_at",
    "problem",
    "gold_answer",
    "graph",
    "parent_run_id",
    "status",
    "error",
    "pid",
    "documents_json",
    "host",
    "pid_started",
    "plan_json",
    "provenance_json",
)
# columns newer than the first schema, added to older databases on open
_ADDED_COLUMNS = {
    "documents_json": "text",
    "host": "text",
    "pid_started": "bigint",
    "plan_json": "text",
    "provenance_json": "text",
}
LEGACY_COLUMNS = ("config_json", "backend_json", "topology_json")
"""What runs saved before runs kept plans held instead: taken into each run's plan when the
database is opened with an ``upgrade``, then dropped."""
PROVENANCE_KEYS = ("plan_choice", "origin")
"""What a run's provenance holds: the plans scored to choose it (``--graph auto``) and what
started it (``serve``)."""

Upgrade = Callable[[str, dict[str, Any], dict[str, Any], dict[str, Any] | None], dict[str, Any]]
"""Turns a legacy row's graph name, config, backend and topology into its plan (plain data)."""


def process_started(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot, from ``/proc``), or None when it
    is gone, a zombie (killed, not yet reaped), or ``/proc`` cannot say.

    Example:
        >>> process_started(os.getpid()) is not None or not Path("/proc").exists()
        True
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
        fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        state, started = fields[0], int(fields[19])
    except (OSError, IndexError, ValueError):
        return None
    return None if state in ("Z", "X", "x") else started


def _this_process() -> tuple[int, str, int | None]:
    """This process's id, host and start time, as the registry keeps them."""
    return os.getpid(), socket.gethostname(), process_started(os.getpid())


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


class UnknownRunError(LookupError):
    """No run has the given id."""


@dataclass(frozen=True)
class RunRecord:
    """One row of the registry: the problem, the run's plan (plain data: read it with
    :func:`tmas.graphs.run_plan.saved_plan`), how the run came to be (``provenance``: the plan
    choice of ``--graph auto``, what started it) and how its last process ended."""

    run_id: str
    created_at: float
    problem: str
    gold_answer: str | None
    graph: str
    parent_run_id: str | None = None
    status: str = "running"
    error: str | None = None
    pid: int | None = None
    documents: list[str] | None = None
    host: str | None = None
    pid_started: int | None = None
    plan: dict[str, Any] | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    def process_alive(self) -> bool:
        """True when the process that last ran this run still runs: the same process id, not a
        zombie, started when that process started (so a reused id does not count). Known only
        for runs last driven on this machine; a run last driven elsewhere counts as not alive.
        """
        if not self.pid or (self.host and self.host != socket.gethostname()):
            return False
        if not Path("/proc").is_dir():
            return _pid_alive(self.pid)
        started = process_started(self.pid)
        if started is None:
            return False
        return self.pid_started is None or started == self.pid_started


def new_run_id() -> str:
    """A short, unique run id.

    Example:
        >>> len(new_run_id())
        12
    """
    return uuid.uuid4().hex[:12]


class RunRegistry:
    """Create, read and update run rows.

    A database whose runs were saved before runs kept plans is upgraded when it is opened,
    once: ``upgrade`` makes each such run's plan from its saved settings, then the columns
    they were kept in are dropped. A run whose settings cannot be read keeps them (and the
    reason, as its error unless it had one) until a later open succeeds; without ``upgrade``
    such a database is refused.

    Example:
        >>> import sqlite3
        >>> reg = RunRegistry(sqlite3.connect(":memory:"))
        >>> reg.create("r1", problem="1+1?", gold_answer=None,
        ...            plan={"topology": {"name": "tmas"}})
        >>> reg.get("r1").status, reg.get("r1").graph
        ('running', 'tmas')
    """

    def __init__(self, conn: SqlConnection | sqlite3.Connection, upgrade: Upgrade | None = None):
        self.db = SqliteSql(conn) if isinstance(conn, sqlite3.Connection) else conn
        try:
            self.db.write(_SCHEMA)
            present = self.db.columns("tmas_runs")
            for column, kind in _ADDED_COLUMNS.items():
                if column not in present:
                    self.db.write(f"alter table tmas_runs add column {column} {kind}")
            if set(LEGACY_COLUMNS) & present:
                self._upgrade(present, upgrade)
        except self.db.database_errors as exc:
            raise StorageError(f"cannot use run database: {exc}") from None

    def _upgrade(self, present: set[str], upgrade: Upgrade | None) -> None:
        """Give every run saved before plans its plan and provenance, then drop the columns
        that held them (only once every run has its plan)."""
        legacy = [c if c in present else "null" for c in LEGACY_COLUMNS]
        rows = self.db.rows(
            f"select run_id, graph, {', '.join(legacy)}, plan_json, provenance_json from tmas_runs"
        )
        unconverted = []
        for run_id, graph, config, backend, topology, plan, provenance in rows:
            saved = json.loads(topology) if topology else None
            if provenance is None:
                kept = {k: v for k, v in (saved or {}).items() if k in PROVENANCE_KEYS and v}
                self.db.write("update tmas_runs set provenance_json=? where run_id=?",
                              (json.dumps(kept), run_id))  # fmt: skip
            if plan is not None:
                continue
            if upgrade is None:
                raise StorageError(
                    "this run database holds runs saved before runs kept plans: open it with "
                    "tmas (any command that reads runs upgrades it once)"
                )
            try:
                made = upgrade(graph, json.loads(config or "{}"), json.loads(backend or "{}"),
                               saved)  # fmt: skip
            except Exception as exc:  # noqa: BLE001 - kept as it is, with the reason
                unconverted.append(run_id)  # its error says why (unless it had one already)
                self.db.write("update tmas_runs set error=coalesce(error, ?) where run_id=?",
                              (f"its saved settings cannot be read: {exc}", run_id))  # fmt: skip
                continue
            self.db.write("update tmas_runs set plan_json=? where run_id=?",
                          (json.dumps(made), run_id))  # fmt: skip
        if not unconverted:
            for column in LEGACY_COLUMNS:
                if column in present:
                    self.db.write(f"alter table tmas_runs drop column {column}")

    def create(
        self,
        run_id: str,
        *,
        problem: str,
        gold_answer: str | None,
        plan: dict[str, Any],
        parent_run_id: str | None = None,
        provenance: dict[str, Any] | None = None,
        documents: list[str] | None = None,
    ) -> None:
        """Register a new run as running in this process: its ``plan`` (a run's plan as plain
        data) and ``provenance`` (how it came to be: :data:`PROVENANCE_KEYS`)."""
        kept = {k: v for k, v in (provenance or {}).items() if v is not None}
        try:
            self.db.write(
                f"insert into tmas_runs ({', '.join(_COLUMNS)}) "
                f"values ({', '.join('?' * len(_COLUMNS))})",
                (
                    run_id,
                    time.time(),
                    problem,
                    gold_answer,
                    plan["topology"]["name"],
                    parent_run_id,
                    "running",
                    None,
                    os.getpid(),
                    json.dumps(documents) if documents else None,
                    *_this_process()[1:],
                    json.dumps(plan),
                    json.dumps(kept),
                ),
            )
        except self.db.integrity_errors:
            raise ValueError(f"a run with id {run_id!r} already exists") from None

    def set_status(self, run_id: str, status: str, error: str | None = None) -> None:
        """Record how the run's last process ended (or that one picked it up again)."""
        self.db.write(
            "update tmas_runs set status=?, error=?, pid=?, host=?, pid_started=? where run_id=?",
            (status, error, *_this_process(), run_id),
        )

    def set_plan(self, run_id: str, plan: dict[str, Any]) -> None:
        """Replace a run's plan (a resume with corrected model settings)."""
        self.db.write("update tmas_runs set plan_json=? where run_id=?", (json.dumps(plan), run_id))

    def get(self, run_id: str) -> RunRecord:
        """The row of ``run_id``; UnknownRunError when there is none."""
        found = self.db.rows(
            f"select {', '.join(_COLUMNS)} from tmas_runs where run_id=?", (run_id,)
        )
        if not found:
            raise UnknownRunError(f"no run with id {run_id!r}; `tmas runs` lists the runs")
        return _record(found[0])

    def exists(self, run_id: str) -> bool:
        """True when a run with this id is registered."""
        return bool(self.db.rows("select 1 from tmas_runs where run_id=?", (run_id,)))

    def all(self) -> list[RunRecord]:
        """Every run, newest first."""
        rows = self.db.rows(f"select {', '.join(_COLUMNS)} from tmas_runs order by created_at desc")
        return [_record(row) for row in rows]


def _record(row: tuple) -> RunRecord:
    return RunRecord(
        run_id=row[0],
        created_at=row[1],
        problem=row[2],
        gold_answer=row[3],
        graph=row[4],
        parent_run_id=row[5],
        status=row[6],
        error=row[7],
        pid=row[8],
        documents=json.loads(row[9]) if row[9] else None,
        host=row[10],
        pid_started=row[11],
        plan=json.loads(row[12]) if row[12] else None,
        provenance=json.loads(row[13]) if row[13] else {},
    )
