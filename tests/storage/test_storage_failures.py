"""A damaged or locked SQLite run database: a clear error, never a traceback, and the file left
as it was; and many processes sharing one SQLite database at once."""

from __future__ import annotations

import hashlib
import os
import random
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli_helpers import PROBLEM, RUN_ID, db_path, digest, invoke, make_home, one_line, run_ids

from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.manager import RunManager
from tmas.llm.backend import BackendSpec
from tmas.storage import open_storage
from tmas.storage.sqlite import BUSY_TIMEOUT_ENV
from tmas.testing.fake_openai_server import FakeOpenAIServer

SMALL = ("--model", "scripted", "-n", "2", "-m", "1", "-t", "2", "--quiet")
PAGE = 4096


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


def commands(url: str, out: Path) -> dict[str, list[str]]:
    """Every command that opens the run database, each with valid input."""
    return {
        "solve": ["solve", PROBLEM, "--base-url", url, *SMALL],
        "runs": ["runs"],
        "show": ["show", RUN_ID],
        "resume": ["resume", RUN_ID],
        "eval": ["eval", "--out", str(out), "--limit", "1", "--base-url", url, *SMALL],
    }


def folder_state(folder: Path) -> dict[str, str]:
    """Every file in ``folder`` with the hash of its bytes."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
        if path.is_file()
    }


def random_bytes(real: bytes) -> bytes:
    return random.Random(7).randbytes(len(real))


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "random bytes": random_bytes,
    "half of a real database": lambda real: real[: len(real) // 2 // PAGE * PAGE],
    "a real database cut mid-page": lambda real: real[: len(real) - PAGE // 2],
    "a real database missing a few bytes": lambda real: real[:-100],
}


@pytest.mark.parametrize("command", ["solve", "runs", "show", "resume", "eval"])
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_database_is_a_clear_error_and_stays_as_it_was(
    tmp_path: Path, server: FakeOpenAIServer, damage: str, command: str
) -> None:
    home = make_home(tmp_path / "home")
    db = db_path(home)
    db.write_bytes(DAMAGE[damage](db.read_bytes()))
    before = folder_state(home)

    result = invoke(home, *commands(server.base_url, tmp_path / "out")[command])

    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    text = one_line(result.stderr)
    assert f"run database {db} is damaged or not a run database" in text
    assert folder_state(home) == before


@pytest.fixture
def paused_home(tmp_path: Path, server: FakeOpenAIServer) -> Path:
    """A TMAS_HOME with a finished run ``r1`` and a paused run ``p1``."""
    home = make_home(tmp_path / "home")
    storage = open_storage(db_path(home))
    config = TMASConfig(n_candidates=2, n_verifications=1, max_iterations=2)
    backend = BackendSpec(kind="openai", base_url=server.base_url, model="scripted")
    RunManager(storage).start(
        "p1",
        problem=PROBLEM,
        gold_answer="18",
        plan=plan_run(load_bundled("tmas"), config, backend),
        show_progress=False,
        review=lambda state: None,  # pause after the first iteration
    )
    storage.close()
    return home


@contextmanager
def locked(db: Path, kind: str) -> Iterator[None]:
    """Another connection holding ``db``'s write lock (``write``: readers still read, as WAL
    allows) or every lock (``exclusive``: nobody else reads either); released unchanged."""
    holder = sqlite3.connect(db, isolation_level=None)
    if kind == "exclusive":
        holder.execute("pragma locking_mode=exclusive")
    holder.execute("begin exclusive")
    holder.execute("select count(*) from tmas_runs").fetchone()
    try:
        yield
    finally:
        holder.execute("rollback")
        holder.close()


LOCKED_COMMANDS = {
    # command: (arguments, whether it fails while another process holds only the write lock)
    "solve": (["solve", PROBLEM], True),
    "eval": (["eval", "--limit", "1"], True),
    "resume an unfinished run": (["resume", "p1"], True),
    "resume a finished run": (["resume", RUN_ID], False),  # it only reads
    "runs": (["runs"], False),
    "show": (["show", "p1"], False),
}


@pytest.mark.parametrize("kind", ["write", "exclusive"])
@pytest.mark.parametrize("command", sorted(LOCKED_COMMANDS))
def test_a_locked_database_is_a_clear_error_and_stays_as_it_was(
    tmp_path: Path, server: FakeOpenAIServer, paused_home: Path, command: str, kind: str
) -> None:
    args, writes = LOCKED_COMMANDS[command]
    if args[0] in ("solve", "eval"):
        args = [*args, "--base-url", server.base_url, *SMALL]
    if args[0] == "eval":
        args = [*args, "--out", str(tmp_path / "out")]
    db = db_path(paused_home)
    before = digest(db)

    with locked(db, kind):
        result = invoke(paused_home, *args, env={BUSY_TIMEOUT_ENV: "0.2"})

    assert "Traceback" not in result.output
    if writes or kind == "exclusive":
        assert result.exit_code != 0
        text = one_line(result.stderr)
        assert f"run database {db} is locked by another process (waited 0.2 s" in text
        assert BUSY_TIMEOUT_ENV in text
    else:
        assert result.exit_code == 0, result.output
    assert digest(db) == before
    assert run_ids(db) == ["p1", RUN_ID]


def test_a_bad_busy_timeout_is_a_clear_error(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    result = invoke(home, "runs", env={BUSY_TIMEOUT_ENV: "soon"})
    assert result.exit_code != 0
    assert f"{BUSY_TIMEOUT_ENV} must be a number of seconds, got 'soon'" in one_line(result.stderr)


@pytest.mark.slow
def test_eight_processes_share_one_new_sqlite_database(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    processes = 8
    db = tmp_path / "shared.sqlite"
    command = [sys.executable, "-m", "tmas.cli", "solve", PROBLEM, "--db", str(db)]
    running = [
        subprocess.Popen(
            [*command, "--base-url", server.base_url, "--run-id", f"s{i}", *SMALL],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "TMAS_HOME": str(tmp_path / "unused-home")},
        )
        for i in range(processes)
    ]
    outputs = [p.communicate(timeout=300)[0] for p in running]
    assert [p.returncode for p in running] == [0] * processes, outputs

    listed = invoke(tmp_path, "runs", "--db", str(db))
    assert listed.exit_code == 0, listed.output
    rows = [line.split() for line in listed.stdout.splitlines() if line.strip().startswith("s")]
    assert sorted(row[0] for row in rows) == [f"s{i}" for i in range(processes)]
    assert all("finished" in row and "2/2" in row for row in rows), listed.stdout
