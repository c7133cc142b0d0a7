"""A user's own ablation on the embedded model: the bundled TMAS spec copied, the guideline
agent removed, run with ``tmas solve --graph my.yaml`` and no package code touched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tmas.checkpoint import connect
from tmas.graphs.bundled import bundled_dir
from tmas.runner import saved_state

pytestmark = pytest.mark.slow


def without_guideline_agent(spec: dict) -> dict:
    spec["name"] = "my_ablation"
    spec["nodes"] = [n for n in spec["nodes"] if n["type"] != "extract_guideline"]
    edges = []
    for edge in spec["edges"]:
        if edge["from"] == "extract_guideline":
            continue
        if isinstance(edge["to"], list):
            edge["to"] = [t for t in edge["to"] if t != "extract_guideline"]
        edges.append(edge)
    spec["edges"] = edges
    return spec


def test_copied_spec_without_guideline_agent_runs_on_smollm2(tmp_path: Path) -> None:
    spec = yaml.safe_load((bundled_dir() / "tmas.yaml").read_text())
    my_spec = tmp_path / "my.yaml"
    my_spec.write_text(yaml.safe_dump(without_guideline_agent(spec)))
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
