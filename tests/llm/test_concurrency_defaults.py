"""A run keeps as many calls in flight as its backend batches unless told otherwise."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tmas.cli import app
from tmas.llm.backend import BackendSpec
from tmas.testing.fake_openai_server import FakeOpenAIServer


def solve(server: FakeOpenAIServer, db: Path, *extra: str) -> None:
    args = [
        "solve", "What is 9 + 9?", "--base-url", server.base_url, "--model", "scripted",
        "--db", str(db), "--quiet", "-n", "8", "-m", "8", "-t", "1", *extra,
    ]  # fmt: skip
    result = CliRunner().invoke(app, args, env={})
    assert result.exit_code == 0, result.output


def test_a_remote_server_gets_every_verification_of_an_iteration_at_once(tmp_path: Path) -> None:
    with FakeOpenAIServer(latency_s=0.3) as server:
        solve(server, tmp_path / "a.sqlite")
    assert server.max_in_flight > 16  # 64 checks; the old default sent them 16 at a time
    with FakeOpenAIServer(latency_s=0.3) as bounded:
        solve(bounded, tmp_path / "b.sqlite", "--max-concurrency", "4")
    assert bounded.max_in_flight <= 4


def test_each_backend_has_its_own_default() -> None:
    remote = BackendSpec(kind="openai", base_url="http://127.0.0.1:1/v1", model="m")
    assert remote.default_concurrency() == 256
    assert BackendSpec(max_sequences=4).default_concurrency() == 8
    assert BackendSpec(engine="serial").default_concurrency() == 1


def checkpoints_of(db: Path) -> int:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return conn.execute("select count(*) from checkpoints where checkpoint_ns=''").fetchone()[0]
    finally:
        conn.close()


def test_the_durability_setting_decides_when_checkpoints_are_written(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        solve(server, tmp_path / "sync.sqlite")
        solve(server, tmp_path / "exit.sqlite", "--set", "durability=exit")
    every_step, at_exit = (
        checkpoints_of(tmp_path / "sync.sqlite"),
        checkpoints_of(tmp_path / "exit.sqlite"),
    )
    assert every_step > 5 and at_exit == 1  # one checkpoint per step, or the last one only
    bad = CliRunner().invoke(app, ["solve", "x", "--set", "durability=sometimes"], env={})
    assert bad.exit_code == 2 and "durability" in bad.output
