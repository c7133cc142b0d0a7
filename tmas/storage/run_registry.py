"""The run registry: one row per run beside the checkpoints, in the same database.

Checkpoints hold the state; the registry holds what is needed to list runs and to rebuild a
run's graph on resume: the problem and the run's plan (its topology, config, backend, roles,
channels, templates and plugins - never API keys). The config, backend and topology of a run
that has a plan are read from it; older runs keep them as they were saved.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
import uuid
from dataclasses import dataclass
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
    config_json text not null,
    backend_json text not null,
    parent_run_id text,
    status text not null,
    error text,
    pid integer,
    topology_json text,
    documents_json text,
    host text,
    pid_started bigint,
    plan_json text
)
"""
_COLUMNS = (
    "run_id",
    "created_at",
    "problem",
    "gold_answer",
    "graph",
    "config_json",
    "backend_json",
    "parent_run_id",
    "status",
    "error",
    "pid",
    "topology_json",
    "documents_json",
    "host",
    "pid_started",
    "plan_json",
)
# columns newer than the first schema, added to older databases on open
_ADDED_COLUMNS = {
    "topology_json": "text",
    "documents_json": "text",
    "host": "text",
    "pid_started": "bigint",
    "plan_json": "text",
}


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
    """One row of the registry."""

    run_id: str
    created_at: float
    problem: str
    gold_answer: str | None
    graph: str
    config: dict[str, Any]
    backend: dict[str, Any]
    parent_run_id: str | None
    status: str
    error: str | None
    pid: int | None
    topology: dict[str, Any] | None = None
    documents: list[str] | None = None
    host: str | None = None
    pid_started: int | None = None
    plan: dict[str, Any] | None = None

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

    Example:
        >>> import sqlite3
        >>> reg = RunRegistry(sqlite3.connect(":memory:"))
        >>> reg.create("r1", problem="1+1?", gold_answer=None, graph="tmas", config={},
        ...            backend={"kind": "llamacpp"})
        >>> reg.get("r1").status
        'running'
    """

    def __init__(self, conn: SqlConnection | sqlite3.Connection) -> None:
        self.db = SqliteSql(conn) if isinstance(conn, sqlite3.Connection) else conn
        try:
            self.db.write(_SCHEMA)
            present = self.db.columns("tmas_runs")
            for column, kind in _ADDED_COLUMNS.items():
                if column not in present:
                    self.db.write(f"alter table tmas_runs add column {column} {kind}")
        except self.db.database_errors as exc:
            raise StorageError(f"cannot use run database: {exc}") from None

    def create(
        self,
        run_id: str,
        *,
        problem: str,
        gold_answer: str | None,
        plan: dict[str, Any] | None = None,
        graph: str | None = None,
        config: dict[str, Any] | None = None,
        backend: dict[str, Any] | None = None,
        parent_run_id: str | None = None,
        topology: dict[str, Any] | None = None,
        documents: list[str] | None = None,
    ) -> None:
        """Register a new run as running in this process: its ``plan`` (a run's plan as plain
        data), or (runs made without one) its ``graph`` name, ``config``, ``backend`` and
        ``topology``; with a plan, ``topology`` holds only what the plan does not (how the plan
        was chosen, what started the run)."""
        if plan is not None:
            graph, config, backend = plan["topology"]["name"], plan["config"], plan["backend"]
        try:
            self.db.write(
                f"insert into tmas_runs ({', '.join(_COLUMNS)}) "
                f"values ({', '.join('?' * len(_COLUMNS))})",
                (
                    run_id,
                    time.time(),
                    problem,
                    gold_answer,
                    graph,
                    json.dumps(config),
                    json.dumps(backend),
                    parent_run_id,
                    "running",
                    None,
                    os.getpid(),
                    json.dumps(topology) if topology is not None else None,
                    json.dumps(documents) if documents else None,
                    *_this_process()[1:],
                    json.dumps(plan) if plan is not None else None,
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
        self.db.write(
            "update tmas_runs set plan_json=?, config_json=?, backend_json=? where run_id=?",
            (json.dumps(plan), json.dumps(plan["config"]), json.dumps(plan["backend"]), run_id),
        )

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
    plan = json.loads(row[15]) if row[15] else None
    topology = json.loads(row[11]) if row[11] else None
    if plan is not None:
        plugins = [plugin["module"] for plugin in plan.get("plugins", [])]
        topology = {"spec": plan["topology"], "plugins": plugins, **(topology or {})}
    return RunRecord(
        run_id=row[0],
        created_at=row[1],
        problem=row[2],
        gold_answer=row[3],
        graph=row[4],
        config=json.loads(row[5]),
        backend=json.loads(row[6]),
        parent_run_id=row[7],
        status=row[8],
        error=row[9],
        pid=row[10],
        topology=topology,
        documents=json.loads(row[12]) if row[12] else None,
        host=row[13],
        pid_started=row[14],
        plan=plan,
    )
