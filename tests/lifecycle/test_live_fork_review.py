"""Live events (--stream and graph.stream), forking from an iteration, pausing for review."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner, Result

from tmas import build_tmas_graph
from tmas.cli import app
from tmas.config import TMASConfig
from tmas.lifecycle.history import saved_state
from tmas.storage import open_storage
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer

PROBLEM = "What is 9 + 9?"
N, M, T = 2, 1, 3
PER_ITERATION = TMASConfig(n_candidates=N, n_verifications=M).calls_per_iteration()
SMALL = ("--model", "scripted", "-n", str(N), "-m", str(M), "-t", str(T), "--quiet")


def invoke(home: Path, *args: str, **kwargs: object) -> Result:
    env = {"TMAS_HOME": str(home), **kwargs.pop("env", {})}  # type: ignore[dict-item]
    return CliRunner().invoke(app, list(args), env=env, **kwargs)  # type: ignore[arg-type]


def history(home: Path, run_id: str) -> list[dict]:
    storage = open_storage(home / "runs.sqlite")
    try:
        return saved_state(storage, run_id)["history"]
    finally:
        storage.close()


def test_graph_stream_yields_the_agents_events() -> None:
    graph = build_tmas_graph(
        TMASConfig(n_candidates=N, n_verifications=M, max_iterations=2), llm=ScriptedChatModel()
    )
    stream = graph.stream({"problem": PROBLEM}, stream_mode=["custom"], subgraphs=True)
    events = [e for _, _, e in stream]  # subgraphs: the events of each candidate's pipeline
    kinds = Counter(e["event"] for e in events)
    assert kinds["candidate"] == N * 2 and kinds["verdict"] == N * M * 2
    assert kinds["iteration"] == 2 and kinds["experience_added"] >= 1
    first = next(e for e in events if e["event"] == "candidate")
    assert {"iteration", "index", "mode", "answer"} <= set(first)


def test_solve_stream_prints_each_event(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        result = invoke(
            tmp_path, "solve", PROBLEM, "--base-url", server.base_url, *SMALL, "--stream"
        )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert sum(" candidate " in line and "answer" in line for line in lines) == N * T
    assert sum("check 0 of candidate" in line for line in lines) == N * M * T
    assert sum(" vote: " in line for line in lines) == T
    assert any("+ experience from candidate" in line for line in lines)


def test_fork_continues_from_an_iteration_with_other_settings(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        solved = invoke(
            tmp_path, "solve", PROBLEM, "--base-url", server.base_url, *SMALL, "--run-id", "parent"
        )
        assert solved.exit_code == 0, solved.output
        parent_before = history(tmp_path, "parent")
        calls = server.request_count
        forked = invoke(
            tmp_path,
            "fork",
            "parent",
            "--iteration",
            "1",
            "--set",
            "epsilon=1.0",
            "--run-id",
            "child",
            "--quiet",
        )
        assert forked.exit_code == 0, forked.output
        assert server.request_count - calls == PER_ITERATION * (T - 1)
    child = history(tmp_path, "child")
    assert [r["iteration"] for r in child] == [1, 2, 3]
    assert child[0] == parent_before[0]
    assert all(mode == "explore" for r in child[1:] for mode in r["modes"])  # epsilon 1.0
    assert history(tmp_path, "parent") == parent_before  # the parent is untouched
    listed = invoke(tmp_path, "runs")
    child_row = next(
        line for line in listed.output.splitlines() if line.strip().startswith("child")
    )
    assert "parent" in child_row


def test_fork_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        invoke(tmp_path, "solve", PROBLEM, "--base-url", server.base_url, *SMALL, "--run-id", "p")
    before = (tmp_path / "runs.sqlite").read_bytes()
    cases = [
        (["fork", "nope", "--iteration", "1"], "no run with id 'nope'"),
        (["fork", "p", "--iteration", str(T)], f"iteration {T} is the last of {T}"),
        (["fork", "p", "--iteration", "1", "--set", "epsilon=7"], "epsilon"),
        (["fork", "p", "--iteration", "1", "--run-id", "p"], "already exists"),
    ]
    for args, message in cases:
        result = invoke(tmp_path, *args)
        assert result.exit_code != 0, args
        assert message in " ".join(result.output.split()), (args, result.output)
    assert (tmp_path / "runs.sqlite").read_bytes() == before


def test_review_pauses_and_resume_finishes_without_repeating_calls(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        paused = invoke(
            tmp_path,
            "solve",
            PROBLEM,
            "--base-url",
            server.base_url,
            *SMALL,
            "--run-id",
            "r",
            "--review",
            input="c\ns\n",
        )
        assert paused.exit_code == 0, paused.output
        assert "paused after iteration 2" in paused.output
        assert server.request_count == PER_ITERATION * 2
        assert "paused" in invoke(tmp_path, "runs").output
        resumed = invoke(tmp_path, "resume", "r", "--quiet")
        assert resumed.exit_code == 0, resumed.output
        assert server.request_count == PER_ITERATION * T
    assert [r["iteration"] for r in history(tmp_path, "r")] == [1, 2, 3]


def test_review_edits_reach_the_next_iteration(tmp_path: Path) -> None:
    editor = tmp_path / "edit.py"
    editor.write_text(
        "import json, sys\n"
        "json.dump({'experience_bank': [{'text': 'MARKER: 9 + 9 = 18', 'kind': 'conclusion'}],"
        " 'guideline_bank': []}, open(sys.argv[1], 'w'))\n"
    )
    with FakeOpenAIServer() as server:
        result = invoke(
            tmp_path,
            "solve",
            PROBLEM,
            "--base-url",
            server.base_url,
            *SMALL,
            "--run-id",
            "e",
            "--set",
            "epsilon=0",
            "--review",
            input="e\nc\n",
            env={"EDITOR": f"{sys.executable} {editor}", "VISUAL": ""},
        )
        assert result.exit_code == 0, result.output
        prompts = [json.dumps(r) for r in server.requests]
    marked = [p for p in prompts if "MARKER: 9 + 9 = 18" in p]
    assert marked, "the edited experience reached no prompt"
    assert "iteration 1 done" in result.output
