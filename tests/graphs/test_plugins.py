"""User node types from the user's own module: registered with ``register_node``, loaded with
``load_plugin`` or ``--plugin``, stored with the run so ``tmas resume`` imports them again."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from tmas.api import build_graph
from tmas.cli import app
from tmas.config import TMASConfig
from tmas.graphs import registry
from tmas.graphs.registry import load_plugin
from tmas.graphs.run_plan import saved_plan
from tmas.graphs.spec import SpecError, load_spec_file, parse_spec
from tmas.graphs.validate import validate_spec
from tmas.llm.router import ModelRouter
from tmas.registration import registry as tmas_registry
from tmas.storage.run_registry import RunRegistry
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.scripted import ScriptedReplies

PLUGIN = "tmas_user_shout_plugin"
PROBLEM = "What is 9 + 9?"

PLUGIN_SOURCE = textwrap.dedent(
    """
    from tmas.graphs.registry import register_node

    @register_node("shout")
    def make_shout(ctx, suffix="!"):
        def shout(state):
            answer = state.get("final_answer")
            return {"final_answer": f"answer {answer}{suffix}".upper()}
        return shout
    """
)

SPEC = {
    "name": "shouted_vote",
    "description": "majority vote whose answer is shouted by a user node",
    "nodes": [
        {"id": "start_iteration", "type": "start_iteration", "params": {"planner": "initial"}},
        {"id": "solve", "type": "solve", "role": "solver"},
        {"id": "record_iteration", "type": "record_iteration"},
        {"id": "shout", "type": "shout", "params": {"suffix": "!!"}},
    ],
    "edges": [
        {"from": "START", "to": "start_iteration"},
        {"from": "start_iteration", "to": "solve", "fanout": {"tasks": "solver_tasks"}},
        {"from": "solve", "to": "record_iteration"},
        {"from": "record_iteration", "to": "shout"},
        {"from": "shout", "to": "start_iteration", "until": "run_finished"},
    ],
}


@pytest.fixture
def isolated_registry(restored_registry: Any) -> Any:
    """The registry, restored after the test."""
    return restored_registry


@pytest.fixture
def plugin_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_registry: None
) -> Iterator[Path]:
    """A folder on sys.path holding the user's plugin module, imported afresh by each test."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    sys.modules.pop(PLUGIN, None)
    yield folder
    sys.modules.pop(PLUGIN, None)


def write_spec(folder: Path) -> Path:
    path = folder / "my.yaml"
    path.write_text(yaml.safe_dump(SPEC, sort_keys=False), encoding="utf-8")
    return path


def forget_plugin() -> None:
    """As in a new process: the module is not imported and its node types are unknown."""
    sys.modules.pop(PLUGIN, None)
    tmas_registry().nodes.remove("shout")


def invoke(home: Path, *args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"TMAS_HOME": str(home)})


def one_line(text: str) -> str:
    return " ".join(text.split())


# ---- from Python ---------------------------------------------------------------------------


def test_spec_with_a_user_node_is_refused_until_the_plugin_is_loaded(plugin_dir: Path) -> None:
    spec = load_spec_file(write_spec(plugin_dir))
    with pytest.raises(SpecError) as caught:
        validate_spec(spec)
    assert "node shout: unknown node type 'shout'" in caught.value.problems[0]

    load_plugin(PLUGIN)

    assert "shout" in tmas_registry().nodes
    assert validate_spec(spec) is spec


def test_user_node_runs_in_a_compiled_spec(plugin_dir: Path) -> None:
    load_plugin(PLUGIN)
    spec = load_spec_file(write_spec(plugin_dir))
    config = TMASConfig(n_candidates=3, max_iterations=2)
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))

    state = build_graph(spec, llm=ModelRouter(model), config=config).invoke({"problem": PROBLEM})

    assert state["final_answer"] == "ANSWER 18!!"  # the spec's params reached the factory
    assert [record["voted_answer"] for record in state["history"]] == ["18", "18"]
    assert dict(model.calls) == {"solver": 6}


def test_user_node_default_params_apply(plugin_dir: Path) -> None:
    load_plugin(PLUGIN)
    data = {**SPEC, "nodes": [*SPEC["nodes"][:3], {"id": "shout", "type": "shout"}]}
    spec = validate_spec(parse_spec(data))
    config = TMASConfig(n_candidates=2, max_iterations=1)
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("7",)))
    state = build_graph(spec, llm=ModelRouter(model), config=config).invoke({"problem": PROBLEM})
    assert state["final_answer"] == "ANSWER 7!"


def test_loading_a_plugin_twice_is_harmless(plugin_dir: Path) -> None:
    load_plugin(PLUGIN)
    entry = tmas_registry().nodes["shout"]
    load_plugin(PLUGIN)
    assert tmas_registry().nodes["shout"] is entry


def test_a_user_type_may_not_take_a_builtin_name(isolated_registry: None) -> None:
    builtin = tmas_registry().nodes["solve"]
    with pytest.raises(ValueError, match="node type 'solve' is already registered by tmas"):
        registry.register_node("solve")(lambda ctx: lambda state: {})
    assert tmas_registry().nodes["solve"] is builtin


def test_a_refused_registration_leaves_the_registries_unchanged(isolated_registry: None) -> None:
    # "join" is a built-in barrier that calls no model; a clashing registration that says
    # calls_llm must not turn it into an LLM node (retry policy, counted by estimate_run_calls).
    assert not tmas_registry().nodes["join"].calls_llm
    with pytest.raises(ValueError, match="node type 'join' is already registered"):
        registry.register_node("join", calls_llm=True)(lambda ctx: lambda state: {})
    assert not tmas_registry().nodes["join"].calls_llm


def test_missing_plugin_module_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="cannot import plugin 'no_such_user_module_xyz'"):
        load_plugin("no_such_user_module_xyz")


def test_plugin_that_fails_to_import_names_itself(plugin_dir: Path) -> None:
    broken = "tmas_user_broken_plugin"
    (plugin_dir / f"{broken}.py").write_text("import no_such_dependency_xyz\n", encoding="utf-8")
    importlib.invalidate_caches()
    try:
        with pytest.raises(ValueError) as caught:
            load_plugin(broken)
    finally:
        sys.modules.pop(broken, None)
    assert f"cannot import plugin {broken!r}" in str(caught.value)
    assert "no_such_dependency_xyz" in str(caught.value)


# ---- from the command line -----------------------------------------------------------------


def test_cli_runs_a_spec_with_a_plugin_and_resume_imports_it_again(
    plugin_dir: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    spec_path = write_spec(plugin_dir)
    replies = ScriptedReplies(answers=("18",))
    with FakeOpenAIServer(replies, max_requests=2) as server:
        # iteration 1 gets its 2 solver calls; iteration 2's calls are refused (HTTP 503)
        first = invoke(
            home,
            "solve",
            PROBLEM,
            "--graph",
            str(spec_path),
            "--plugin",
            PLUGIN,
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
            "plug1",
            "--quiet",
        )
        assert first.exit_code == 1, first.output
        assert "tmas resume plug1" in one_line(first.stderr)
        assert server.request_count == 2

        conn = connect(home / "runs.sqlite")
        try:
            record = RunRegistry(conn).get("plug1")
        finally:
            conn.close()
        assert record.graph == "shouted_vote"
        plan = saved_plan(record)
        assert plan.plugin_refs() == [PLUGIN]
        assert [n.type for n in plan.topology.nodes][-1] == "shout"

        forget_plugin()
        assert "shout" not in tmas_registry().nodes
        server.max_requests = 100

        resumed = invoke(home, "resume", "plug1", "--quiet")

        assert resumed.exit_code == 0, resumed.output
        assert PLUGIN in sys.modules  # resume imported the stored plugin again
        assert "shout" in tmas_registry().nodes
        assert "answer ANSWER 18!!" in one_line(resumed.stdout)
        assert server.request_count == 4  # only iteration 2's two solver calls were added

    shown = invoke(home, "show", "plug1")
    assert shown.exit_code == 0, shown.output
    text = one_line(shown.stdout)
    assert "topology: shouted_vote" in text
    assert "status: finished" in text
    assert "answer ANSWER 18!!" in text


def test_cli_plugin_run_in_one_go(plugin_dir: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeOpenAIServer(ScriptedReplies(answers=("18",))) as server:
        result = invoke(
            home,
            "solve",
            PROBLEM,
            "--graph",
            str(write_spec(plugin_dir)),
            "--plugin",
            PLUGIN,
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
        )
        assert server.request_count == 2
    assert result.exit_code == 0, result.output
    assert '"final_answer": "ANSWER 18!!"' in result.stdout


def test_cli_without_the_plugin_names_the_unknown_type(plugin_dir: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = invoke(home, "solve", PROBLEM, "--graph", str(write_spec(plugin_dir)))
    assert result.exit_code != 0
    assert "node shout: unknown node type 'shout'" in one_line(result.stderr)
    assert not (home / "runs.sqlite").exists()


def test_cli_missing_plugin_module_exits_non_zero(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = invoke(home, "solve", PROBLEM, "--plugin", "no_such_user_module_xyz")
    assert result.exit_code != 0
    assert "cannot import plugin 'no_such_user_module_xyz'" in one_line(result.stderr)
    assert "Traceback" not in result.output
    assert not (home / "runs.sqlite").exists()


# ---- plugin files: private module names, one import, saved with the runs that use them ----


def test_a_plugin_file_named_like_a_module_hides_nothing(tmp_path: Path) -> None:
    plugin = tmp_path / "tabnanny.py"
    plugin.write_text("LOADED_AS_PLUGIN = True\n", encoding="utf-8")
    sys.modules.pop("tabnanny", None)
    saved = load_plugin(str(plugin))
    assert saved == str(plugin.resolve())
    import tabnanny  # the standard library's, not the plugin

    assert not hasattr(tabnanny, "LOADED_AS_PLUGIN")


def test_a_plugin_file_loaded_by_two_threads_at_once_runs_once(tmp_path: Path) -> None:
    import threading

    plugin = tmp_path / "counted_plugin.py"
    log = tmp_path / "imports.log"
    plugin.write_text(
        f"import time\nwith open({str(log)!r}, 'a') as f:\n    f.write('x')\ntime.sleep(0.2)\n",
        encoding="utf-8",
    )
    errors: list[BaseException] = []

    def load() -> None:
        try:
            load_plugin(str(plugin))
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == [] and log.read_text() == "x"


def test_a_plugin_imported_by_hand_is_saved_with_the_run(
    tmp_path: Path, isolated_registry: None
) -> None:
    import tmas

    plugin = tmp_path / "by_hand_shout.py"
    plugin.write_text(PLUGIN_SOURCE.replace('"shout"', '"shout_by_hand"'), encoding="utf-8")
    load_plugin(str(plugin))  # registered, but not named to solve
    data = {**SPEC, "nodes": [*SPEC["nodes"][:3], {"id": "shout", "type": "shout_by_hand"}]}
    db = tmp_path / "runs.sqlite"
    tmas.solve(
        PROBLEM,
        topology=data,
        llm=ScriptedChatModel(),
        db=db,
        run_id="hand",
        config={"n_candidates": 2, "max_iterations": 1},
    )
    registry = RunRegistry(connect(db))
    assert saved_plan(registry.get("hand")).plugin_refs() == [str(plugin.resolve())]
