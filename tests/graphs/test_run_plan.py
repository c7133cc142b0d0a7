"""One place resolves a run's settings: the plan a run saves is the plan its graph was compiled
from, whether the run came from the command line, the Python API or ``tmas serve``; a resume
compiles the saved plan again, and the state keeps no copy of the settings."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tmas
import tmas.lifecycle.manager as manager_module
from tests.cli_helpers import invoke
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import RunPlan, plan_run
from tmas.lifecycle.history import saved_state
from tmas.llm.backend import BackendSpec
from tmas.serve.service import ChatService
from tmas.storage import open_storage
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer

PROBLEM = "What is 9 + 9?"


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[RunPlan]]:
    """Every plan the run manager compiles, in order."""
    seen: list[RunPlan] = []
    original = manager_module.compile_plan

    def recording(plan: RunPlan, router: Any, **options: Any) -> Any:
        seen.append(plan)
        return original(plan, router, **options)

    monkeypatch.setattr(manager_module, "compile_plan", recording)
    yield seen


def saved(db: Path, run_id: str) -> tuple[RunPlan, dict[str, Any]]:
    storage = open_storage(db)
    try:
        record = storage.registry.get(run_id)
        return RunPlan.model_validate(record.plan), saved_state(storage, run_id)
    finally:
        storage.close()


def test_the_command_line_saves_the_plan_it_compiled(tmp_path: Path, compiled: list) -> None:
    home = tmp_path / "home"
    with FakeOpenAIServer() as server:
        result = invoke(
            home, "solve", PROBLEM, "--graph", "majority_vote", "--base-url", server.base_url,
            "--model", "scripted", "-n", "3", "--set", "temperature=0.3", "--quiet",
            "--run-id", "cli",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    plan, state = saved(home / "runs.sqlite", "cli")
    assert compiled == [plan]
    assert (plan.config.n_candidates, plan.config.temperature) == (3, 0.3)
    assert plan.config.max_iterations == 1  # the topology's own config: block
    assert plan.backend.model == "scripted" and plan.models["solver"].startswith("openai:")
    assert "config" not in state  # no copy of the settings in the state


def test_the_python_api_saves_the_plan_it_compiled_and_resume_compiles_it_again(
    tmp_path: Path, compiled: list
) -> None:
    db = tmp_path / "runs.sqlite"
    model = ScriptedChatModel()
    settings = {"n_candidates": 2, "n_verifications": 1, "max_iterations": 2}
    tmas.solve(PROBLEM, topology="tmas", llm=model, db=db, config=settings, run_id="py")
    plan, state = saved(db, "py")
    assert compiled == [plan]
    assert plan.backend.kind == "custom" and plan.config.max_iterations == 2
    assert set(plan.prompts) >= {"solver/system", "verifier/user"}  # every template, kept
    assert "config" not in state
    tmas.resume("py", db=db, llm=model)  # finished: compiles nothing
    assert compiled == [plan]


def test_tmas_serve_saves_the_plan_it_compiled(tmp_path: Path, compiled: list) -> None:
    db = tmp_path / "runs.sqlite"
    service = ChatService.with_chat_model(ScriptedChatModel(), db=str(db))
    try:
        body = service.complete_sync(
            {
                "model": "majority_vote",
                "n_candidates": 2,
                "seed": 7,
                "messages": [{"role": "user", "content": PROBLEM}],
            }
        )
    finally:
        service.close()
    run_id = body["tmas"]["run_ids"][0]
    plan, state = saved(db, run_id)
    assert compiled == [plan]
    assert (plan.config.n_candidates, plan.config.seed) == (2, 7)
    assert "config" not in state


def test_a_plan_round_trips_and_two_specs_keep_their_roles_apart() -> None:
    """Two topologies declaring a role of the same name differently: each plan keeps its own
    declaration, and neither reaches the process's registered roles."""
    base = load_bundled("majority_vote").model_dump(by_alias=True)
    one = plan_run(
        load_bundled("majority_vote").model_validate({**base, "name": "one", "roles": {
            "twin": {"max_tokens": 11}}}),
        None,
        BackendSpec(model="smollm2"),
    )  # fmt: skip
    two = plan_run(
        load_bundled("majority_vote").model_validate({**base, "name": "two", "roles": {
            "twin": {"max_tokens": 22, "model": "verifier"}}}),
        None,
        BackendSpec(model="smollm2"),
    )  # fmt: skip
    assert one.role_book()["twin"].max_tokens == 11 and two.role_book()["twin"].max_tokens == 22
    assert one.role_book().model_key("twin") == "twin"
    assert two.role_book().model_key("twin") == "verifier"
    assert "twin" not in tmas.graphs.run_plan.RoleBook.registered()
    again = RunPlan.model_validate(one.record())
    assert again == one and again.digest() == one.digest()


def twin_spec(name: str, budget: int, model: str | None) -> dict[str, Any]:
    """Best-of-N whose checks play a role ``twin`` declared with ``budget`` tokens."""
    return {
        "name": name,
        "config": {"max_iterations": 1, "n_verifications": 1},
        "roles": {"twin": {"max_tokens": budget, "model": model}},
        "nodes": [
            {"id": "start", "type": "start_iteration", "params": {"planner": "initial"}},
            {"id": "solve", "type": "solve"},
            {"id": "solved", "type": "join"},
            {"id": "check", "type": "verify", "role": "twin"},
            {"id": "checked", "type": "join"},
            {"id": "record", "type": "record_iteration"},
        ],
        "edges": [
            {"from": "START", "to": "start"},
            {"from": "start", "to": "solve", "fanout": {"tasks": "solver_tasks"}},
            {"from": "solve", "to": "solved"},
            {"from": "solved", "to": "check", "fanout": {"tasks": "verification_tasks"}},
            {"from": "check", "to": "checked"},
            {"from": "checked", "to": "record"},
            {"from": "record", "to": "start", "until": "run_finished"},
        ],
    }


def test_a_server_offering_two_specs_with_the_same_role_name_keeps_them_apart(
    tmp_path: Path,
) -> None:
    main, judge = ScriptedChatModel(), ScriptedChatModel()
    topologies = {
        name: tmas.load_topology(twin_spec(name, budget, model))
        for name, budget, model in (("one", 11, None), ("two", 22, "verifier"))
    }
    service = ChatService.with_chat_model(
        main, topologies, role_models={"verifier": judge}, db=str(tmp_path / "runs.sqlite")
    )
    try:
        for name in ("one", "two", "one"):
            service.complete_sync(
                {
                    "model": name,
                    "n_candidates": 1,
                    "messages": [{"role": "user", "content": PROBLEM}],
                }  # fmt: skip
            )
    finally:
        service.close()
    on_main = [call.kwargs["max_tokens"] for call in main.log if call.role == "twin"]
    on_judge = [call.kwargs["max_tokens"] for call in judge.log if call.role == "twin"]
    assert on_main == [11, 11]  # "one": its own budget, the main model
    assert on_judge == [22]  # "two": its own budget, the verifier's model it borrows
