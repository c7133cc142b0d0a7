"""A run database written before runs kept their plans in one place opens as it was: the first
open gives every run its plan (a run that saved none gets one made of its saved config,
backend and topology), moves how it came to be into its provenance and drops the old columns,
once; its runs then list, show, resume and export as before, and their calls carry the
settings they were saved with.

``data/runs_saved_before_plans.db`` was written by the release before this layout: run ``done``
(finished; ``--set verifier_max_tokens=40 --role-model summary=scripted``) and run ``paused``
(paused after its first of three iterations), whose plan was taken out as releases before plans
saved runs."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from tests.cli_helpers import invoke
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.scripted import ScriptedReplies

SAVED = Path(__file__).parent / "data" / "runs_saved_before_plans.db"
OLD_COLUMNS = {"config_json", "backend_json", "topology_json"}


def columns(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {row[1] for row in conn.execute("pragma table_info(tmas_runs)")}
    finally:
        conn.close()


def shown(home: Path, db: Path, run_id: str) -> dict:
    result = invoke(home, "show", run_id, "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_an_older_database_is_upgraded_once_and_its_runs_go_on(tmp_path: Path) -> None:
    db, home = tmp_path / "old.db", tmp_path / "home"
    shutil.copy(SAVED, db)
    assert OLD_COLUMNS <= columns(db)

    listed = invoke(home, "runs", "--db", str(db))
    assert listed.exit_code == 0, listed.output
    assert "done" in listed.output and "paused" in listed.output
    assert not OLD_COLUMNS & columns(db)  # the first open upgraded it
    again = invoke(home, "runs", "--db", str(db))
    assert again.exit_code == 0 and again.output == listed.output  # a second open changes nothing

    done = shown(home, db, "done")
    bindings = done["plan"]["bindings"]
    assert (bindings["verifier"]["max_tokens"], bindings["summary"]["model"]) == (40, "scripted")
    assert done["final_answer"] == "18"
    paused = shown(home, db, "paused")["plan"]
    assert paused["topology"]["name"] == "tmas" and paused["config"]["max_iterations"] == 3
    assert paused["bindings"]["verifier"]["max_tokens"] == 256

    with FakeOpenAIServer(replies=ScriptedReplies(answers=("18",))) as server:
        resumed = invoke(
            home, "resume", "paused", "--db", str(db), "--base-url", server.base_url,
            "--model", "scripted", "--quiet",
        )  # fmt: skip
        assert resumed.exit_code == 0, resumed.output
        assert server.requests  # iterations 2 and 3
        plan = shown(home, db, "paused")["plan"]
        for body in server.requests:
            binding = plan["bindings"][body["tmas"]["role"]]
            budget = body.get("max_completion_tokens", body.get("max_tokens"))
            assert (budget, body.get("temperature")) == (
                binding["max_tokens"],
                binding["temperature"],
            )
    assert shown(home, db, "paused")["final_answer"] == "18"

    rows = tmp_path / "rows.jsonl"
    exported = invoke(home, "export", "rollouts", "done", "--out", str(rows), "--db", str(db))
    assert exported.exit_code == 0, exported.output
    assert len(rows.read_text(encoding="utf-8").splitlines()) == 4  # 2 candidates x 2 iterations
