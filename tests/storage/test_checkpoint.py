"""Checkpoints hold plain data, round-trip under a strict msgpack serializer, and a saved value
that would run code (a pickle, a msgpack constructor call) is refused, never run."""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from cli_helpers import RUN_ID, db_path, invoke, make_home
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from tmas import build_tmas_graph
from tmas.config import TMASConfig
from tmas.lifecycle.history import saved_state
from tmas.storage import open_storage
from tmas.storage.checkpointer import open_checkpointer, strict_serializer
from tmas.storage.sqlite import StorageError, connect
from tmas.testing.fake_chat import ScriptedChatModel

# Runs in a fresh interpreter: LANGGRAPH_STRICT_MSGPACK is read when langgraph is imported.
STRICT_ROUND_TRIP = r"""
import dataclasses
import json
import logging
import sys
import warnings

messages = []
events = []


class Keep(logging.Handler):
    def emit(self, record):
        messages.append(f"{record.levelname} {record.name}: {record.getMessage()}")


logging.getLogger().addHandler(Keep())
logging.getLogger().setLevel(logging.DEBUG)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from langgraph.checkpoint.serde import _msgpack
    from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener

    register_serde_event_listener(events.append)

    from tmas.storage.checkpointer import open_checkpointer, strict_serializer
    from tmas.storage.sqlite import connect
    from tmas.config import TMASConfig
    from tmas import build_tmas_graph
    from tmas.testing.fake_chat import ScriptedChatModel

    db = sys.argv[1]
    config = TMASConfig(n_candidates=3, n_verifications=2, max_iterations=2)
    thread = {"configurable": {"thread_id": "strict"}}
    graph = build_tmas_graph(
        config, llm=ScriptedChatModel(), checkpointer=open_checkpointer(connect(db))
    )
    final = graph.invoke({"problem": "What is 9 + 9?", "gold_answer": "18"}, thread)

    reopened = open_checkpointer(connect(db))
    raw = reopened.get_tuple(thread).checkpoint["channel_values"]
    from tmas.state import RunState

    # the state's own channels (not LangGraph's: "__pregel_tasks", a join's "join:a+b:c")
    loaded = {k: v for k, v in raw.items() if k in RunState.__annotations__}
    regraph = build_tmas_graph(config, llm=ScriptedChatModel(), checkpointer=reopened)
    via_graph = dict(regraph.get_state(thread).values)
    history_count = len(list(regraph.get_state_history(thread)))

# A reducer channel that was never written reads as its empty default in the graph's output but
# is absent from the checkpoint; that is not a difference in what was saved.
final = {k: v for k, v in final.items() if k in loaded or v not in ([], {})}
via_graph = {k: v for k, v in via_graph.items() if k in loaded or v not in ([], {})}

run_messages = list(messages)
run_warnings = [f"{w.category.__name__}: {w.message}" for w in caught]
run_events = list(events)

# Control: an unregistered type under the same serializer must be reported, proving that the
# checks above could see a problem.
@dataclasses.dataclass
class Unregistered:
    x: int


serde = strict_serializer()
serde.loads_typed(serde.dumps_typed({"value": Unregistered(1)}))

print(json.dumps({
    "strict": _msgpack.STRICT_MSGPACK_ENABLED,
    "keys": sorted(final),
    "loaded_equal": loaded == final,
    "differing": sorted(k for k in set(loaded) | set(final) if loaded.get(k) != final.get(k)),
    "via_graph_equal": via_graph == final,
    "parts_equal": {
        key: loaded.get(key) == final.get(key)
        for key in ("history", "experience_bank", "guideline_bank", "usage", "final_answer")
    },
    "history_len": len(final["history"]),
    "bank_sizes": [len(final["experience_bank"]), len(final["guideline_bank"])],
    "checkpoints": history_count,
    "messages": run_messages,
    "warnings": run_warnings,
    "events": run_events,
    "control_events": [e["kind"] for e in events[len(run_events):]],
    "control_messages": messages[len(run_messages):],
}))
"""

SUSPICIOUS = ("msgpack", "unregistered", "blocked")


@pytest.mark.slow
def test_strict_msgpack_round_trip_in_a_fresh_interpreter(tmp_path: Path) -> None:
    env = {**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true"}
    done = subprocess.run(
        [sys.executable, "-c", STRICT_ROUND_TRIP, str(tmp_path / "strict.sqlite")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])

    assert report["strict"] is True
    assert report["history_len"] == 2
    assert report["bank_sizes"][0] > 0 and report["bank_sizes"][1] > 0
    assert report["checkpoints"] > 2
    assert report["parts_equal"] == dict.fromkeys(report["parts_equal"], True)
    assert report["differing"] == []
    assert report["loaded_equal"] is True
    assert report["via_graph_equal"] is True

    noise = report["messages"] + report["warnings"] + [json.dumps(e) for e in report["events"]]
    bad = [line for line in noise if any(word in line.lower() for word in SUSPICIOUS)]
    assert bad == []
    assert report["events"] == []
    # The control shows that a blocked type would have been seen.
    assert "msgpack_blocked" in report["control_events"]
    assert any("blocked" in m.lower() for m in report["control_messages"])
    assert not any(word in done.stderr.lower() for word in SUSPICIOUS), done.stderr


def test_every_checkpoint_holds_plain_json_data(tmp_path: Path) -> None:
    config = TMASConfig(n_candidates=2, n_verifications=2, max_iterations=2)
    saver = open_checkpointer(connect(tmp_path / "plain.sqlite"))
    graph = build_tmas_graph(config, llm=ScriptedChatModel(), checkpointer=saver)
    thread = {"configurable": {"thread_id": "plain"}}
    graph.invoke({"problem": "What is 9 + 9?", "gold_answer": "18", "config": {"n": 2}}, thread)

    snapshots = list(graph.get_state_history(thread))
    assert len(snapshots) > 8  # the run's own supersteps (each candidate's chain is one)
    for snapshot in snapshots:
        text = json.dumps(snapshot.values)  # raises on anything but plain data
        assert json.loads(text) == snapshot.values  # and nothing changes on the way (no tuples)
    # the checkpoints each candidate's chain saves under its own namespace, too
    chains = [c for c in saver.list(thread) if c.config["configurable"]["checkpoint_ns"]]
    assert len(chains) >= 2 * 2 * 3  # N chains per iteration, several steps each
    for saved in chains:
        values = {
            k: v for k, v in saved.checkpoint["channel_values"].items() if not k.startswith("__")
        }  # the state's channels (LangGraph's own hold its pending Sends)
        assert json.loads(json.dumps(values)) == values
    final = snapshots[0].values
    assert final["stop_reason"] == "max_iterations"
    assert len(final["history"]) == 2


def test_checkpointer_uses_the_strict_serializer(tmp_path: Path) -> None:
    saver = open_checkpointer(connect(tmp_path / "serde.sqlite"))
    assert isinstance(saver.serde, JsonPlusSerializer)
    assert saver.serde.pickle_fallback is False
    serde = strict_serializer()
    value = {"a": [1, 2.5, "x", None, {"b": True}]}
    assert serde.loads_typed(serde.dumps_typed(value)) == value


def test_connect_uses_wal_and_reports_unusable_files(tmp_path: Path) -> None:
    conn = connect(tmp_path / "deep" / "dir" / "runs.sqlite")
    assert conn.execute("pragma journal_mode").fetchone()[0] == "wal"
    assert conn.execute("pragma busy_timeout").fetchone()[0] == 30000
    not_a_db = tmp_path / "garbage.sqlite"
    not_a_db.write_bytes(b"this is not a database file at all" * 100)
    with pytest.raises(StorageError):
        connect(not_a_db)


class _CreatesMarker:
    """Unpickling this runs ``open(path, "w")``: proof that a pickle was executed."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (open, (str(self.path), "w"))


def _latest_checkpoint(db: Path, run_id: str) -> tuple[str, str, bytes]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "select checkpoint_id, type, checkpoint from checkpoints where thread_id=? "
            "order by checkpoint_id desc limit 1",
            (run_id,),
        ).fetchone()
    finally:
        conn.close()


def _replace_checkpoint(db: Path, checkpoint_id: str, kind: str, blob: bytes) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "update checkpoints set type=?, checkpoint=? where checkpoint_id=?",
            (kind, blob, checkpoint_id),
        )
        conn.execute("update writes set type=?, value=?", (kind, blob))
    conn.close()


def test_a_pickled_checkpoint_is_refused_and_never_run(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home")
    db = db_path(home)
    control, marker = tmp_path / "control", tmp_path / "marker"
    pickle.loads(pickle.dumps(_CreatesMarker(control)))
    assert control.exists()  # the payload is live: loading it would create the file

    checkpoint_id, _, _ = _latest_checkpoint(db, RUN_ID)
    _replace_checkpoint(db, checkpoint_id, "pickle", pickle.dumps(_CreatesMarker(marker)))

    storage = open_storage(db)
    try:
        with pytest.raises(StorageError, match="refused to decode .* of type 'pickle'"):
            saved_state(storage, RUN_ID)
    finally:
        storage.close()
    for command in (["show", RUN_ID], ["show", RUN_ID, "--json"], ["resume", RUN_ID], ["runs"]):
        result = invoke(home, *command)
        assert result.exit_code != 0, result.output
        assert "Traceback" not in result.output
        assert "refused to decode a saved checkpoint value of type 'pickle'" in result.stderr
    assert not marker.exists()


def test_a_checkpoint_naming_a_callable_is_not_called(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home")
    db = db_path(home)
    control, marker = tmp_path / "control", tmp_path / "marker"
    call_control = ormsgpack.Ext(1, ormsgpack.packb(("io", "open", [str(control), "w"])))
    permissive = JsonPlusSerializer(allowed_msgpack_modules=True)
    permissive.loads_typed(permissive.dumps_typed({"value": call_control}))
    assert control.exists()  # the payload is live: a permissive serializer calls open()

    checkpoint_id, kind, blob = _latest_checkpoint(db, RUN_ID)
    serde = strict_serializer()
    checkpoint = serde.loads_typed((kind, blob))
    call_open = ormsgpack.Ext(1, ormsgpack.packb(("io", "open", [str(marker), "w"])))
    checkpoint["channel_values"]["final_answer"] = call_open
    _replace_checkpoint(db, checkpoint_id, *serde.dumps_typed(checkpoint))

    storage = open_storage(db)
    try:
        state = saved_state(storage, RUN_ID)
    finally:
        storage.close()
    assert not isinstance(state["final_answer"], str)  # left as data, not revived
    result = invoke(home, "show", RUN_ID)
    assert "Traceback" not in result.output
    assert not marker.exists()
