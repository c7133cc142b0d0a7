"""The header check of a run database never opens the file while this process holds SQLite
connections to it: closing any descriptor of the file would drop SQLite's POSIX locks, and
another process could then checkpoint the WAL under one of our readers. A file damaged while
nothing of ours holds it is still refused."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from tmas.storage import sqlite as sqlite_module
from tmas.storage.sqlite import StorageError, connect
from tmas.storage.sqlite_files import holds_open


def test_no_header_read_while_a_connection_holds_the_file(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "runs.sqlite"
    reads: list[Path] = []
    real = sqlite_module.file_damage
    monkeypatch.setattr(sqlite_module, "file_damage", lambda p: reads.append(p) or real(p))
    first = connect(db)
    first.execute("create table t (x)")
    first.commit()
    assert reads == [db] and holds_open(db)
    second = connect(db)  # e.g. another thread of an evaluation
    assert reads == [db]  # the file was not opened beside SQLite's descriptors
    second.close()
    assert holds_open(db)
    first.close()
    assert not holds_open(db)
    connect(db).close()
    assert reads == [db, db]


def test_a_collected_connection_stops_holding_the_file(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    conn = connect(db)
    assert holds_open(db)
    del conn
    gc.collect()
    assert not holds_open(db)


def test_a_file_cut_short_while_closed_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    conn = connect(db)
    conn.execute("create table t (x)")
    conn.commit()
    conn.close()
    with db.open("ab") as handle:
        handle.write(b"\0" * 100)
    with pytest.raises(StorageError, match="cut short"):
        connect(db)
    assert not holds_open(db)
