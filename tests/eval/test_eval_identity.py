"""An evaluation's identity covers everything that determines its results: rerunning into the
same folder with any of it changed is refused, naming what changed; summary.json records it."""

from __future__ import annotations

import functools
import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tmas.cli import app
from tmas.config import RoleModel, TMASConfig
from tmas.eval.data import load_problems
from tmas.eval.evaluation import RESULTS, SUMMARY, Evaluation
from tmas.eval.identity import IDENTITY, EvaluationMismatch, check_identity, write_identity
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.graphs.spec import GraphSpec
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer

CONFIG = TMASConfig(n_candidates=2, n_verifications=1, max_iterations=1, max_retries=0)
BACKEND = BackendSpec(kind="openai", base_url="http://unused/v1", model="scripted")
PLUGIN = "tmas_identity_test_plugin"


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / f"{PLUGIN}.py").write_text("VALUE = 1\n", encoding="utf-8")
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))
    sys.modules.pop(PLUGIN, None)


def evaluation(tmp_path: Path, model: ScriptedChatModel, **changes: Any) -> Evaluation:
    """An evaluation of two sample problems planned from its parts (``changes`` replace any of
    spec, config, backend and plugins)."""
    parts: dict[str, Any] = {
        "spec": load_bundled("majority_vote"),
        "config": CONFIG,
        "backend": BACKEND,
        "plugins": [],
        **changes,
    }
    return Evaluation(
        problems=load_problems("gsm8k", limit=2),
        plan=plan_run(parts["spec"], parts["config"], parts["backend"], parts["plugins"]),
        router=ModelRouter(model),
        db=tmp_path / "runs.sqlite",
        out_dir=tmp_path / "out",
    )


def edited_spec() -> GraphSpec:
    spec = load_bundled("majority_vote").model_dump(by_alias=True)
    spec["nodes"][-1]["params"] = {"selection": "vote_all"}
    return GraphSpec.model_validate(spec)


CHANGES: dict[str, tuple[Callable[[], dict[str, Any]], str]] = {
    "model": (lambda: {"backend": BACKEND.model_copy(update={"model": "other"})},
              "backend.model: 'scripted' -> 'other'"),
    "backend": (lambda: {"backend": BackendSpec(model="smollm2")},
                "backend.kind: 'openai' -> 'llamacpp'"),
    "role model": (
        lambda: {"config": CONFIG.model_copy(update={"roles": {"verifier": RoleModel(model="j")}})},
        "models.verifier: 'openai:scripted @ http://unused/v1' -> 'openai:j @ http://unused/v1'",
    ),
    "config": (lambda: {"config": CONFIG.model_copy(update={"epsilon": 0.5})},
               "config.epsilon: 0.2 -> 0.5"),
    "edited spec, same name": (lambda: {"spec": edited_spec()},
                               "spec.nodes.2.params.selection: 'majority_last' -> 'vote_all'"),
    "plugins": (lambda: {"plugins": [PLUGIN]}, f"plugins.0.module: (none) -> '{PLUGIN}'"),
}  # fmt: skip


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_rerun_with_anything_changed_is_refused_naming_it(
    tmp_path: Path, plugin_dir: Path, change: str
) -> None:
    model = ScriptedChatModel()
    evaluation(tmp_path, model).run()
    calls, results = sum(model.calls.values()), (tmp_path / "out" / RESULTS).read_text()
    make, named = CHANGES[change]
    with pytest.raises(EvaluationMismatch) as refused:
        evaluation(tmp_path, model, **make()).run()
    assert named in str(refused.value)
    assert "write this evaluation to another --out folder" in str(refused.value)
    assert sum(model.calls.values()) == calls
    assert (tmp_path / "out" / RESULTS).read_text() == results


def test_a_changed_plugin_source_or_prompt_is_refused(tmp_path: Path, plugin_dir: Path) -> None:
    model = ScriptedChatModel()
    evaluation(tmp_path, model, plugins=[PLUGIN]).run()
    (plugin_dir / f"{PLUGIN}.py").write_text("VALUE = 2\n", encoding="utf-8")
    with pytest.raises(EvaluationMismatch, match=r"plugins\.0\.sha256"):
        evaluation(tmp_path, model, plugins=[PLUGIN]).run()
    (plugin_dir / f"{PLUGIN}.py").write_text("VALUE = 1\n", encoding="utf-8")
    brief = load_bundled("majority_vote").with_prompts({"solver/system": "Be brief."})
    with pytest.raises(EvaluationMismatch, match=r"prompts\.solver/system"):
        evaluation(tmp_path, model, plugins=[PLUGIN], spec=brief).run()
    evaluation(tmp_path, model, plugins=[PLUGIN]).run()  # the same settings go on


def test_summary_records_everything_that_determines_the_results(tmp_path: Path) -> None:
    evaluation(tmp_path, ScriptedChatModel()).run()
    summary = json.loads((tmp_path / "out" / SUMMARY).read_text())
    identity = summary["identity"]
    assert identity == json.loads((tmp_path / "out" / IDENTITY).read_text())
    assert identity["spec"]["name"] == "majority_vote" and identity["spec"]["nodes"]
    assert identity["config"]["n_candidates"] == 2
    assert identity["backend"] == {"kind": "openai", "model": "scripted",
                                   "base_url": "http://unused/v1"}  # fmt: skip
    assert set(identity["models"]) == {"solver", "verifier", "summary", "experience", "guideline"}
    assert identity["plugins"] == [] and "solver/exploit" in identity["prompts"]
    assert summary["selections"] == ["majority_last"]


def test_a_folder_saved_before_identities_is_checked_run_by_run(tmp_path: Path) -> None:
    model = ScriptedChatModel()
    evaluation(tmp_path, model).run()
    (tmp_path / "out" / IDENTITY).unlink()
    other = {"backend": BACKEND.model_copy(update={"model": "other"})}
    with pytest.raises(EvaluationMismatch, match="backend.model: 'scripted' -> 'other'"):
        evaluation(tmp_path, model, **other).run()
    assert not (tmp_path / "out" / IDENTITY).exists()
    evaluation(tmp_path, model).run()
    assert (tmp_path / "out" / IDENTITY).exists()


def cli_eval(server: FakeOpenAIServer, folder: Path, model: str) -> Any:
    """``tmas eval`` of two sample problems into ``folder/out`` with ``model`` on ``server``."""
    return CliRunner().invoke(app, [
        "eval", "--out", str(folder / "out"), "--data", "gsm8k", "--limit", "2", "--base-url",
        server.base_url, "--model", model, "-n", "2", "-m", "1", "-t", "1", "--db",
        str(folder / "runs.sqlite"), "--quiet",
    ])  # fmt: skip


def test_cli_refuses_another_model_into_the_same_folder(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        run = functools.partial(cli_eval, server, tmp_path)

        assert run("scripted").exit_code == 0
        served = server.request_count
        refused = run("another-model")
        assert server.request_count == served
    assert refused.exit_code == 2
    assert "backend.model: 'scripted' -> 'another-model'" in refused.output
    assert textwrap.dedent(refused.output).startswith("error:")


def test_a_stopped_evaluation_takes_corrected_model_settings(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with FakeOpenAIServer(served_models=("scripted",)) as server:
        run = functools.partial(cli_eval, server, tmp_path)

        stopped = run("scriptd")
        assert stopped.exit_code == 1 and "(HTTP 404)" in stopped.output
        assert json.loads((out / IDENTITY).read_text())["stopped"]
        fixed = run("scripted")
        assert fixed.exit_code == 0, fixed.output
        assert run("other").exit_code == 2  # once problems finished, no more changes
    summary = json.loads((out / SUMMARY).read_text())
    assert summary["finished"] == 2 and summary["identity"]["backend"]["model"] == "scripted"
    assert "stopped" not in json.loads((out / IDENTITY).read_text())


def test_only_model_settings_may_change_and_only_before_anything_finished(
    tmp_path: Path,
) -> None:
    saved = {"backend": {"kind": "openai", "model": "a"}, "config": {"epsilon": 0.2}}
    write_identity(tmp_path, {**saved, "stopped": "verifier model 'a': HTTP 404"})
    fixed = {**saved, "backend": {"kind": "openai", "model": "b"}}
    assert check_identity(tmp_path, fixed) is True
    with pytest.raises(EvaluationMismatch, match="backend.model"):
        check_identity(tmp_path, fixed, answered=True)
    with pytest.raises(EvaluationMismatch, match="config.epsilon"):
        check_identity(tmp_path, {**fixed, "config": {"epsilon": 0.5}})


def test_settings_the_topology_cannot_be_built_with_save_nothing(tmp_path: Path) -> None:
    bad = CONFIG.model_copy(update={"selection": "no_such_rule"})
    with pytest.raises(ValueError, match="unknown selection rule 'no_such_rule'"):
        evaluation(tmp_path, ScriptedChatModel(), config=bad).run()
    assert not (tmp_path / "out" / IDENTITY).exists()


def test_fault_handling_settings_and_descriptions_are_not_identity(tmp_path: Path) -> None:
    model = ScriptedChatModel()
    evaluation(tmp_path, model).run()
    spec = load_bundled("majority_vote").model_copy(update={"description": "reworded"})
    patient = CONFIG.model_copy(update={"max_retries": 5, "history_window": 50})
    evaluation(tmp_path, model, spec=spec, config=patient).run()  # not refused
