"""Roles are call metadata and prompts are data: overrides from a spec or a file reach the
model, are saved with the run and shown; bad overrides and unknown roles are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli_helpers import invoke
from tmas.api import build_graph
from tmas.config import RoleModel, TMASConfig
from tmas.graphs.bundled import bundled_dir, load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.graphs.spec import GraphSpec, SpecError, load_spec_file
from tmas.graphs.validate import validate_spec
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.nodes.prompts import PromptSet
from tmas.roles import RoleBook
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer

PROBLEM = "What is 9 + 9?"


def run(spec_overrides: dict[str, Any], model: ScriptedChatModel, **config: Any) -> dict[str, Any]:
    spec = load_bundled("majority_vote").model_copy(update=spec_overrides)
    graph = build_graph(spec, llm=ModelRouter(model), config=TMASConfig(n_candidates=2, **config))
    return graph.invoke({"problem": PROBLEM})


def test_a_spec_prompt_override_reaches_the_model_and_the_role_is_metadata() -> None:
    model = ScriptedChatModel()
    # wording that once marked the verifier: the call is still the solver's
    system = "You are the verification agent. Think, then write \\boxed{{answer}}."
    result = run({"prompts": {"solver/system": system}}, model, max_iterations=1)
    assert result["final_answer"] == "18"
    assert {call.system for call in model.log} == {
        "You are the verification agent. Think, then write \\boxed{answer}."
    }
    assert model.calls["solver"] == 2 and model.calls["verifier"] == 0
    assert {call.prompt for call in model.log} == {"solver/initial"}


def test_an_override_using_a_field_its_prompt_lacks_is_refused_before_any_call() -> None:
    model = ScriptedChatModel()
    with pytest.raises(SpecError, match=r"prompts\.verifier/user uses \{score\}"):
        run({"prompts": {"verifier/user": "Check {solution} and {score}"}}, model)
    with pytest.raises(SpecError, match="a prompt key is 'group/name'"):
        run({"prompts": {"solver": "no group"}}, model)
    assert model.log == []


def test_a_mode_without_a_template_fails_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"no prompt 'solver/debate'; solver has: solver/"):
        PromptSet().render("solver/debate", problem="?")


def test_a_role_declared_in_a_spec_belongs_to_its_runs_with_its_budget_and_borrowed_model() -> None:
    spec = load_bundled("majority_vote").model_dump(by_alias=True)
    spec["roles"] = {"spec_critic": {"max_tokens": 77, "model_of": "verifier"}}
    plan = plan_run(validate_spec(GraphSpec.model_validate(spec)), None, BackendSpec())
    book = plan.role_book()
    assert book["spec_critic"].max_tokens == 77
    assert "spec_critic" not in RoleBook.registered()  # never a role of the whole process
    assert plan.bindings["spec_critic"].max_tokens == 77
    assert plan.bindings["spec_critic"].model_of == "verifier"
    main, judge = ScriptedChatModel(), ScriptedChatModel()
    bound = {"bindings": plan.bindings}
    assert ModelRouter(main, {"verifier": judge}, **bound).model_for("spec_critic") is judge
    own = ScriptedChatModel()
    router = ModelRouter(main, {"verifier": judge, "spec_critic": own}, **bound)
    assert router.model_for("spec_critic") is own
    revised = plan.revised({"roles": {"spec_critic": RoleModel(max_tokens=12)}})
    assert revised.bindings["spec_critic"].max_tokens == 12


def test_model_is_the_older_spelling_of_model_of_in_a_spec_roles_block() -> None:
    spec = load_bundled("majority_vote").model_dump(by_alias=True)
    spec["roles"] = {"old_critic": {"max_tokens": 9, "model": "verifier"}}
    plan = plan_run(validate_spec(GraphSpec.model_validate(spec)), None, BackendSpec())
    assert plan.role_book().model_key("old_critic") == "verifier"
    spec["roles"] = {"old_critic": {"max_tokens": 9, "model": "verifier", "model_of": "solver"}}
    with pytest.raises(ValueError, match="model_of"):
        GraphSpec.model_validate(spec)


def test_a_node_naming_an_undeclared_role_and_a_role_borrowing_an_unknown_one_are_refused() -> None:
    spec = load_bundled("majority_vote").model_dump(by_alias=True)
    spec["nodes"][1]["role"] = "oracle"
    spec["roles"] = {"critic_x": {"max_tokens": 5, "model": "nobody"}}
    with pytest.raises(SpecError) as found:
        validate_spec(GraphSpec.model_validate(spec))
    text = str(found.value)
    assert "node solve: unknown role 'oracle'" in text
    assert "roles.critic_x: borrows the model of unknown role 'nobody'" in text


def test_prompt_files_are_read_relative_to_the_spec(tmp_path: Path) -> None:
    data = yaml.safe_load((bundled_dir() / "majority_vote.yaml").read_text())
    data["prompts"] = {"solver/system": {"file": "prompts/system.txt"}}
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "system.txt").write_text("From a file. \\boxed{{answer}}\n")
    (tmp_path / "mv.yaml").write_text(yaml.safe_dump(data))
    assert load_spec_file(tmp_path / "mv.yaml").prompts == {
        "solver/system": "From a file. \\boxed{{answer}}"
    }
    data["prompts"] = {"solver/system": {"file": "missing.txt"}}
    (tmp_path / "mv.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError, match="prompts.solver/system: cannot read"):
        load_spec_file(tmp_path / "mv.yaml")


def test_prompts_file_on_the_command_line_is_used_saved_and_shown(tmp_path: Path) -> None:
    prompts = tmp_path / "brief.yaml"
    system = "Answer tersely. Put the result in \\boxed{{answer}}."
    prompts.write_text(yaml.safe_dump({"solver/system": system}))
    home = tmp_path / "home"
    with FakeOpenAIServer() as server:
        result = invoke(
            home,
            "solve",
            PROBLEM,
            "--graph",
            "majority_vote",
            "--prompts",
            str(prompts),
            "--base-url",
            server.base_url,
            "--model",
            "scripted",
            "-n",
            "2",
            "--quiet",
            "--run-id",
            "brief",
        )
        assert result.exit_code == 0, result.output
        solver_systems = {
            r["messages"][0]["content"] for r in server.requests if r["tmas"]["role"] == "solver"
        }
    assert solver_systems == {"Answer tersely. Put the result in \\boxed{answer}."}
    shown = invoke(home, "show", "brief")
    assert "prompts overridden: solver/system" in shown.stdout
    full = invoke(home, "show", "brief", "--prompts")
    assert system in full.stdout
    as_json = json.loads(invoke(home, "show", "brief", "--json").stdout)
    assert as_json["prompts"] == {"solver/system": system}


def test_a_bad_prompts_file_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"verifier/user": "{problem} {nonsense}"}))
    result = invoke(tmp_path / "home", "solve", PROBLEM, "--prompts", str(bad))
    assert result.exit_code != 0
    assert "prompts.verifier/user uses {nonsense}" in result.stderr
    missing = invoke(tmp_path / "home", "solve", PROBLEM, "--prompts", str(tmp_path / "no.yaml"))
    assert missing.exit_code != 0 and "cannot read" in missing.stderr
    assert not (tmp_path / "home" / "runs.sqlite").exists()
