"""As a new user would: copy the bundled ``tmas`` spec, remove the guideline agent, and run it
with ``tmas solve --graph my.yaml`` without touching package code."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from tmas.cli import app
from tmas.graphs.bundled import bundled_dir
from tmas.graphs.pipeline import bodies
from tmas.graphs.run_plan import saved_plan
from tmas.graphs.spec import GraphSpec, load_spec_file
from tmas.graphs.validate import validate_spec
from tmas.lifecycle.history import saved_state
from tmas.storage.run_registry import RunRegistry
from tmas.storage.sqlite import connect
from tmas.testing.fake_openai_server import FakeOpenAIServer

PROBLEM = "What is 9 + 9?"
GUIDELINE = "You are the guideline agent"


def without_guideline(data: dict[str, Any]) -> dict[str, Any]:
    """The spec with the guideline agent's node, its edge and its fan-out target removed, in
    the candidate pipeline's body where it sits."""
    data = {**_without_guideline_here(data), "name": "my_tmas_without_guideline"}
    data["nodes"] = [
        {**n, "params": {**n["params"], "spec": _without_guideline_here(n["params"]["spec"])}}
        if n["type"] == "pipeline"
        else n
        for n in data["nodes"]
    ]
    return data


def _without_guideline_here(data: dict[str, Any]) -> dict[str, Any]:
    data = dict(data)
    data["nodes"] = [n for n in data["nodes"] if n["type"] != "extract_guideline"]
    edges = []
    for edge in data["edges"]:
        if edge["from"] == "extract_guideline":
            continue
        if isinstance(edge["to"], list):
            edge = {**edge, "to": [t for t in edge["to"] if t != "extract_guideline"]}
        edges.append(edge)
    data["edges"] = edges
    return data


def chain_of(spec: GraphSpec) -> GraphSpec:
    """The body of the spec's candidate pipeline."""
    return bodies(spec)["candidate"]


def make_user_spec(folder: Path) -> Path:
    copy = folder / "tmas_copy.yaml"
    shutil.copy(bundled_dir() / "tmas.yaml", copy)
    data = yaml.safe_load(copy.read_text(encoding="utf-8"))
    path = folder / "my.yaml"
    path.write_text(yaml.safe_dump(without_guideline(data), sort_keys=False), encoding="utf-8")
    return path


def invoke(home: Path, *args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"TMAS_HOME": str(home)})


def system_of(request: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"] if m["role"] == "system")


def solve_on_fake_server(home: Path, graph: str, *extra: str) -> tuple[Result, list[dict]]:
    """``tmas solve`` (N=2, M=1, T=2) of ``graph`` against the scripted loopback server."""
    with FakeOpenAIServer() as server:
        result = invoke(
            home,
            "solve",
            PROBLEM,
            "--graph",
            graph,
            "--base-url",
            server.base_url,
            "--model",
            "scripted",
            "-n",
            "2",
            "-m",
            "1",
            "-t",
            "2",
            "--quiet",
            *extra,
        )
        return result, server.requests


def test_the_edited_copy_is_a_valid_spec_without_the_guideline_agent(tmp_path: Path) -> None:
    spec = chain_of(validate_spec(load_spec_file(make_user_spec(tmp_path))))
    assert "extract_guideline" not in spec.node_ids()
    assert all("extract_guideline" not in e.targets for e in spec.edges)
    assert all(e.source != "extract_guideline" for e in spec.edges)
    reflection = [e for e in spec.edges if e.source == "summarize"]
    assert len(reflection) == 1 and reflection[0].targets == ["extract_experience"]


def test_user_ablation_runs_from_the_cli_without_guideline_calls(tmp_path: Path) -> None:
    home = tmp_path / "home"
    spec_path = make_user_spec(tmp_path)
    result, requests = solve_on_fake_server(home, str(spec_path), "--run-id", "ablation")

    assert result.exit_code == 0, result.output
    systems = [system_of(r) for r in requests]
    assert not any(GUIDELINE in s for s in systems)
    assert not any(GUIDELINE in str(m["content"]) for r in requests for m in r["messages"])
    per_role = Counter(r["tmas"]["role"] for r in requests)
    # per iteration: 2 solvers, 2 x 1 verifiers, 2 summaries, 2 experience extractions
    assert per_role == Counter({"solver": 4, "verifier": 4, "summary": 4, "experience": 4})

    conn = connect(home / "runs.sqlite")
    try:
        record = RunRegistry(conn).get("ablation")
    finally:
        conn.close()
    assert record.graph == "my_tmas_without_guideline"
    stored = saved_plan(record).topology
    stored_types = {n.type for n in chain_of(stored).nodes}
    assert "extract_guideline" not in stored_types and "extract_experience" in stored_types

    shown = invoke(home, "show", "ablation", "--json")
    assert shown.exit_code == 0, shown.output
    assert '"stop_reason": "max_iterations"' in shown.stdout
    assert "guideline" not in json.loads(shown.stdout)["usage"]  # no guideline call was made


def test_bundled_tmas_does_send_guideline_prompts(tmp_path: Path) -> None:
    """The control: the same command on the unedited spec asks the guideline agent."""
    result, requests = solve_on_fake_server(tmp_path, "tmas")
    assert result.exit_code == 0, result.output
    per_role = Counter(r["tmas"]["role"] for r in requests)
    assert per_role["guideline"] == 4


@pytest.mark.slow
def test_copied_spec_without_guideline_agent_runs_on_smollm2(tmp_path: Path) -> None:
    spec = yaml.safe_load((bundled_dir() / "tmas.yaml").read_text())
    my_spec = tmp_path / "my.yaml"
    my_spec.write_text(yaml.safe_dump(without_guideline(spec)))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tmas.cli",
            "solve",
            "Tom has 3 apples and buys 4 more. How many apples does he have?",
            "--gold",
            "7",
            "--graph",
            str(my_spec),
            "--model",
            "smollm2",
            "-n",
            "2",
            "-m",
            "1",
            "-t",
            "2",
            "--max-tokens",
            "48",
            "--set",
            "verifier_max_tokens=24",
            "--set",
            "summary_max_tokens=24",
            "--set",
            "experience_max_tokens=32",
            "--run-id",
            "mine",
            "--quiet",
            "--db",
            str(tmp_path / "runs.sqlite"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    state = saved_state(connect(tmp_path / "runs.sqlite"), "mine")
    assert state["stop_reason"] == "max_iterations" and len(state["history"]) == 2
    assert "guideline" not in state["usage"]
    assert state["usage"]["experience"]["calls"] == 4
    assert state["guideline_bank"] == []
