"""Helpers shared by the command-line tests: a run database with one finished run, the CLI
invoked in-process, and a hash proving that a database was left untouched."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from tmas.cli import app
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.manager import RunManager
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies

RUN_ID = "r1"
PROBLEM = "What is 9 + 9?"


def db_path(home: Path) -> Path:
    """The default run database under ``TMAS_HOME=home``."""
    return home / "runs.sqlite"


def digest(path: Path) -> str:
    """Hash of the database file, its write-ahead log and (when it opens) its logical content;
    for a path that does not exist, a fixed marker."""
    if not path.exists():
        return "missing"
    sha = hashlib.sha256(path.read_bytes())
    wal = path.with_name(path.name + "-wal")
    sha.update(wal.read_bytes() if wal.exists() else b"")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        for statement in conn.iterdump():
            sha.update(statement.encode("utf-8"))
    except sqlite3.DatabaseError:
        pass  # a damaged file: its bytes are the whole story
    finally:
        conn.close()
    return sha.hexdigest()


def run_ids(path: Path) -> list[str]:
    """The ids of the runs registered in the database at ``path``."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [row[0] for row in conn.execute("select run_id from tmas_runs order by run_id")]
    finally:
        conn.close()


def invoke(
    home: Path, *args: str, env: Mapping[str, str | None] | None = None, **kwargs: Any
) -> Result:
    """Run ``tmas ARGS`` in-process with ``TMAS_HOME=home`` (and ``env``)."""
    environment = {"TMAS_HOME": str(home), **(env or {})}
    return CliRunner().invoke(app, list(args), env=environment, **kwargs)


def one_line(text: str) -> str:
    """``text`` with every run of whitespace collapsed to one space."""
    return " ".join(text.split())


def make_home(home: Path) -> Path:
    """Make ``home`` a TMAS_HOME whose database holds one finished run (id ``r1``) made with a
    scripted model, its write-ahead log folded into the main file."""
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
    conn = connect(db_path(home))
    manager = RunManager(conn, router_factory=lambda plan: ModelRouter(model))
    outcome = manager.start(
        RUN_ID,
        problem=PROBLEM,
        gold_answer="18",
        plan=plan_run(
            load_bundled("tmas"),
            TMASConfig(n_candidates=2, n_verifications=1, max_iterations=2),
            BackendSpec(),
        ),
        show_progress=False,
    )
    assert outcome.state["final_answer"] == "18"
    conn.close()  # folds the WAL into the main file, so its hash covers every row
    return home
