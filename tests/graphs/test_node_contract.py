"""No silent drops at the node contract: a node returning a key that is no state field or
channel fails naming the node and the key; a plugin that raises at run time is named with its
node, file, function and line; a resume after the plugin's file changed says so and saves the
new digest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import tmas
from tests.cli_helpers import invoke, one_line
from tmas.testing.fake_openai_server import FakeOpenAIServer

PROBLEM = "What is 9 + 9?"
SPARKLE = textwrap.dedent(
    """
    from tmas.plugin import register_node

    @register_node("sparkle")
    def make_sparkle(ctx):
        def sparkle(state):
            return {"sparkles": 3}
        return sparkle
    """
)
SPEC = textwrap.dedent(
    """
    name: sparkling_vote
    nodes:
      - {id: start, type: start_iteration, params: {planner: initial}}
      - {id: solve, type: solve}
      - {id: vote, type: record_iteration}
      - {id: sparkle, type: sparkle}
    edges:
      - {from: START, to: start}
      - {from: start, to: solve, fanout: {tasks: solver_tasks}}
      - {from: solve, to: vote}
      - {from: vote, to: sparkle}
      - {from: sparkle, to: start, until: run_finished}
    """
)
BROKEN_SIMILARITY = textwrap.dedent(
    """
    from tmas.plugin import register_similarity

    @register_similarity("t_fragile")
    def fragile(query, texts):
        raise RuntimeError("boom")
    """
)
FIXED_SIMILARITY = BROKEN_SIMILARITY.replace(
    'raise RuntimeError("boom")', "return [0.0] * len(texts)"
)


def backend(server: FakeOpenAIServer) -> list[str]:
    return ["--base-url", server.base_url, "--model", "scripted", "--quiet"]


def test_a_node_returning_an_undeclared_key_fails_naming_it(
    tmp_path: Path, restored_registry: Any
) -> None:
    plugin, spec = tmp_path / "sparkle.py", tmp_path / "sparkling.yaml"
    plugin.write_text(SPARKLE, encoding="utf-8")
    spec.write_text(SPEC, encoding="utf-8")
    with FakeOpenAIServer() as server:
        result = invoke(
            tmp_path / "home", "solve", PROBLEM, "--plugin", str(plugin), "--graph", str(spec),
            "-n", "2", "-t", "1", *backend(server),
        )  # fmt: skip
    assert result.exit_code == 1
    text = one_line(result.output)
    assert (
        "node sparkle (sparkle) returned 'sparkles', which is no field of the run's state" in text
    )
    assert "declare a channel" in text


def test_a_plugin_raising_at_run_time_is_named_and_a_fixed_file_is_noted_on_resume(
    tmp_path: Path, restored_registry: Any
) -> None:
    home, plugin = tmp_path / "home", tmp_path / "fragile.py"
    plugin.write_text(BROKEN_SIMILARITY, encoding="utf-8")
    with FakeOpenAIServer() as server:
        failed = invoke(
            home, "solve", PROBLEM, "--plugin", str(plugin), "--set", "similarity=t_fragile",
            "-n", "2", "-m", "1", "-t", "2", "--run-id", "f1", *backend(server),
        )  # fmt: skip
        assert failed.exit_code == 1
        text = one_line(failed.output)
        assert "boom" in text and "at node" in text
        assert f"raised in plugin {plugin}, function fragile, line 6" in text
        assert "tmas resume f1" in text

        before = json.loads(invoke(home, "show", "f1", "--json").stdout)["plan"]["plugins"]
        plugin.write_text(FIXED_SIMILARITY, encoding="utf-8")
        resumed = subprocess.run(  # a new process: it imports the plugin file as it is now
            [sys.executable, "-m", "tmas.cli", "resume", "f1", "--quiet"],
            env={**os.environ, "TMAS_HOME": str(home)}, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert f"plugin {plugin} changed since the run was saved" in one_line(resumed.stderr)
    after = json.loads(invoke(home, "show", "f1", "--json").stdout)["plan"]["plugins"]
    assert [p["module"] for p in after] == [p["module"] for p in before] == [str(plugin)]
    assert after[0]["sha256"] != before[0]["sha256"]


MISGROUPED = textwrap.dedent(
    """
    from tmas.plugin import register_node, register_prompts, register_role

    register_role("t_critic", max_tokens=64, model_of="verifier")
    register_prompts("t_critique", {"system": "You criticise.", "user": "Criticise {solution}"})

    @register_node("t_critique", calls_llm=True, role="t_critic", group="verifier",
                   prompts={"system": (), "user": ()})
    def make_critique(ctx):
        return lambda task: {}
    """
)


def test_templates_a_plugin_registers_under_a_group_no_node_renders_are_refused(
    tmp_path: Path, restored_registry: Any
) -> None:
    saved = restored_registry.snapshot()
    plugin = tmp_path / "misgrouped.py"
    plugin.write_text(MISGROUPED, encoding="utf-8")
    spec = {
        "name": "critiqued",
        "nodes": [
            {"id": "start", "type": "start_iteration", "params": {"planner": "initial"}},
            {"id": "solve", "type": "solve"},
            {"id": "critique", "type": "t_critique"},
            {"id": "vote", "type": "record_iteration"},
        ],
        "edges": [
            {"from": "START", "to": "start"},
            {"from": "start", "to": "solve", "fanout": {"tasks": "solver_tasks"}},
            {"from": "solve", "to": "critique", "fanout": {"tasks": "verification_tasks"}},
            {"from": "critique", "to": "vote"},
            {"from": "vote", "to": "start", "until": "run_finished"},
        ],
    }
    with pytest.raises(ValueError) as refused:
        tmas.load_topology(spec, plugins=[str(plugin)])
    text = one_line(str(refused.value))
    assert "registers prompts t_critique/system, t_critique/user, which no node" in text
    assert "its nodes render templates under t_critic/" in text
    restored_registry.restore(saved)
    fixed = tmp_path / "grouped.py"
    fixed.write_text(MISGROUPED.replace('"t_critique", {"system"', '"t_critic", {"system"'))
    assert tmas.load_topology(spec, plugins=[str(fixed)]).name == "critiqued"
