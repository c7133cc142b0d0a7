"""Reading checkpoints without LangGraph gives what the saver gives: the same latest state and
the same states newest first, LangGraph's own task channels aside; anything that is not plain
data is read by the saver itself."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import ormsgpack
import pytest

from tmas.api import build_graph
from tmas.lifecycle.history import saved_state
from tmas.storage import sqlite_storage
from tmas.storage.checkpoint_reader import NotPlainData, SqliteCheckpointReader, decode_checkpoint
from tmas.storage.checkpointer import open_checkpointer
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel

THREAD = {"configurable": {"thread_id": "r1", "checkpoint_ns": ""}}


def plain(values: dict) -> dict:
    """A state without LangGraph's own channels (what the reader leaves out)."""
    return {k: v for k, v in values.items() if not k.startswith(("__", "branch:"))}


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reader") / "runs.sqlite"
    conn = connect(path)
    config = {"n_candidates": 2, "n_verifications": 1, "max_iterations": 2}
    graph = build_graph("tmas", llm=ScriptedChatModel(), checkpointer=open_checkpointer(conn),
                        config=config)  # fmt: skip
    graph.invoke({"problem": "What is 9 + 9?"}, {"configurable": {"thread_id": "r1"}})
    conn.close()
    return path


def test_the_reader_answers_as_the_saver_does(database: Path) -> None:
    conn = connect(database)
    saver = open_checkpointer(conn)
    reader = SqliteCheckpointReader(conn, saver=lambda: pytest.fail("fell back to the saver"))
    latest, expected = reader.get_tuple(THREAD), saver.get_tuple(THREAD)
    assert (
        latest.config["configurable"]["checkpoint_id"]
        == expected.config["configurable"]["checkpoint_id"]
    )
    assert latest.checkpoint["channel_values"] == plain(expected.checkpoint["channel_values"])
    assert all(not name.startswith("__") for name in latest.checkpoint["channel_values"])
    mine, theirs = list(reader.list(THREAD)), list(saver.list(THREAD))
    assert len(mine) == len(theirs) >= 8  # two iterations of several steps each
    for read, saved in zip(mine, theirs, strict=True):
        assert read.checkpoint["channel_values"] == plain(saved.checkpoint["channel_values"])
        assert read.metadata.get("step") == saved.metadata.get("step")
    assert reader.get_tuple({"configurable": {"thread_id": "none"}}) is None
    conn.close()


def test_some_checkpoints_hold_langgraph_objects_that_are_left_out(database: Path) -> None:
    conn = connect(database)
    kinds = [row[0] for row in conn.execute("select checkpoint from checkpoints")]
    found = []
    for blob in kinds:
        ormsgpack.unpackb(blob, ext_hook=lambda code, data: found.append(code))
    assert found  # the fan-outs' Send objects: the case the reader must handle
    conn.close()


def test_saved_state_reads_without_opening_the_saver(database: Path) -> None:
    storage = sqlite_storage(connect(database))
    state = saved_state(storage, "r1")
    assert storage._checkpointer is None  # noqa: SLF001 - the point of the test
    assert state["final_answer"] == "18" and len(state["history"]) == 2
    storage.close()


def test_a_value_that_is_not_plain_data_is_read_by_the_saver(tmp_path: Path) -> None:
    blob = ormsgpack.packb({"channel_values": {"answer": ormsgpack.Ext(9, b"x")}})
    with pytest.raises(NotPlainData):
        decode_checkpoint("msgpack", blob)
    conn = sqlite3.connect(tmp_path / "odd.sqlite")
    conn.execute("create table checkpoints (thread_id text, checkpoint_ns text, "
                 "checkpoint_id text, parent_checkpoint_id text, type text, checkpoint blob, "
                 "metadata blob)")  # fmt: skip
    conn.execute("insert into checkpoints values ('r1', '', 'c1', null, 'msgpack', ?, '{}')",
                 (blob,))  # fmt: skip
    asked = []
    reader = SqliteCheckpointReader(conn, saver=lambda: asked.append(1) or FullSaver())
    assert reader.get_tuple(THREAD) == "from the saver" and asked == [1]
    assert list(reader.list(THREAD)) == ["from the saver"] and asked == [1, 1]


class FullSaver:
    """Stands for LangGraph's saver: says it was asked."""

    def get_tuple(self, config: dict) -> str:
        return "from the saver"

    def list(self, config: dict, **options: object) -> list[str]:
        return ["from the saver"]
