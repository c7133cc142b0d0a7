"""Plugins load as users write them, with the installed ``tmas`` in a subprocess and no path
tricks: a module beside the user (``--plugin my_nodes``) or a file (``--plugin ./x/y.py``),
and a run made with a plugin file resumes from any directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tmas.graphs.run_plan import saved_plan
from tmas.storage import open_storage
from tmas.testing.fake_openai_server import FakeOpenAIServer

pytestmark = pytest.mark.slow

PLUGIN = textwrap.dedent(
    """
    from tmas.graphs.registry import register_node

    @register_node("shout")
    def make_shout(ctx, suffix: str = "!"):
        return lambda state: {"final_answer": f"{state.get('final_answer')}{suffix}".upper()}
    """
)
SPEC = textwrap.dedent(
    """
    name: shouted_tmas
    nodes:
      - {id: start_iteration, type: start_iteration}
      - {id: solve, type: solve}
      - {id: record_iteration, type: record_iteration}
      - {id: shout, type: shout, params: {suffix: " apples!"}}
    edges:
      - {from: START, to: start_iteration}
      - {from: start_iteration, to: solve, fanout: {tasks: solver_tasks}}
      - {from: solve, to: record_iteration}
      - {from: record_iteration, to: start_iteration, until: run_finished, exit: shout}
      - {from: shout, to: END}
    """
)


def tmas_command(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it (no PYTHONPATH)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TMAS_BASE_URL")}
    env["TMAS_HOME"] = str(home)
    script = Path(sys.executable).with_name("tmas")
    return subprocess.run(
        [str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / "plugins").mkdir(parents=True)
    (folder / "plugins" / "shouting.py").write_text(PLUGIN, encoding="utf-8")
    (folder / "shouting_here.py").write_text(PLUGIN.replace('"shout"', '"shout_here"'))
    (folder / "shouted.yaml").write_text(SPEC, encoding="utf-8")
    (folder / "shouted_here.yaml").write_text(SPEC.replace("type: shout,", "type: shout_here,"))
    return folder


def test_a_module_beside_the_user_loads_by_name(project: Path, tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        done = tmas_command(
            "solve",
            "What is 9 + 9?",
            "--graph",
            "shouted_here.yaml",
            "--plugin",
            "shouting_here",
            "--base-url",
            server.base_url,
            "--model",
            "scripted",
            "-n",
            "2",
            "-t",
            "1",
            "--quiet",
            "--json",
            cwd=project,
            home=tmp_path / "home",
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["final_answer"].endswith(" APPLES!")


@pytest.mark.parametrize(
    ("graph", "plugin"),
    [("shouted.yaml", "./plugins/shouting.py"), ("shouted_here.yaml", "shouting_here")],
    ids=["file", "module-beside"],
)
def test_a_plugin_run_resumes_from_anywhere(
    project: Path, tmp_path: Path, graph: str, plugin: str
) -> None:
    home = tmp_path / "home"
    # the server answers iteration 1 (2 calls), then refuses: the run stops, resumable
    with FakeOpenAIServer(max_requests=2) as server:
        first = tmas_command(
            "solve",
            "What is 9 + 9?",
            "--graph",
            graph,
            "--plugin",
            plugin,
            "--base-url",
            server.base_url,
            "--model",
            "scripted",
            "-n",
            "2",
            "-t",
            "2",
            "--set",
            "max_retries=0",
            "--run-id",
            "loud",
            "--quiet",
            cwd=project,
            home=home,
        )
    assert first.returncode == 1, first.stdout + first.stderr
    assert "every solver call of iteration 2 failed" in first.stderr
    storage = open_storage(home / "runs.sqlite")
    try:
        saved = saved_plan(storage.registry.get("loud")).plugin_refs()
    finally:
        storage.close()
    source = "plugins/shouting.py" if plugin.endswith(".py") else "shouting_here.py"
    assert saved == [str((project / source).resolve())]  # found again from anywhere
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with FakeOpenAIServer() as server:
        resumed = tmas_command(
            "resume",
            "loud",
            "--base-url",
            server.base_url,
            "--json",
            "--quiet",
            cwd=elsewhere,
            home=home,
        )
        assert server.request_count == 2  # only iteration 2's calls
    assert resumed.returncode == 0, resumed.stderr
    state = json.loads(resumed.stdout)
    assert state["final_answer"].endswith(" APPLES!") and len(state["history"]) == 2


def test_a_missing_plugin_file_is_one_clear_error(project: Path, tmp_path: Path) -> None:
    done = tmas_command(
        "solve",
        "What is 9 + 9?",
        "--graph",
        "shouted.yaml",
        "--plugin",
        "./nope/missing.py",
        cwd=project,
        home=tmp_path / "home",
    )
    assert done.returncode == 2
    assert "cannot import plugin './nope/missing.py': no such file" in " ".join(done.stderr.split())
    assert not (tmp_path / "home" / "runs.sqlite").exists()
