"""The public Python API: one definition per topology (the bundled YAML), the spec's config
applied as on the command line, solve/resume/fork/evaluate with any chat model, settings that
reach custom models, and runs of custom models that the command line refuses to resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

import tmas
from tests.cli_helpers import db_path, digest, invoke
from tmas.api import build_graph
from tmas.config import RoleModel, TMASConfig
from tmas.graphs import bundled
from tmas.graphs.bundled import bundled_dir, bundled_names, load_bundled
from tmas.graphs.run_plan import plan_run, saved_plan
from tmas.graphs.served import FACTORIES, langgraph_graphs, served_graph
from tmas.graphs.traits import spec_needs_internals
from tmas.lifecycle.manager import RunManager
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.storage import open_storage
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.scripted import ScriptedReplies

PROBLEM = "What is 9 + 9?"
SMALL = {"n_candidates": 2, "n_verifications": 1, "max_iterations": 2}


# ---- one definition per topology ---------------------------------------------------------


def test_build_tmas_graph_compiles_the_bundled_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Editing the bundled spec file changes what the Python builder builds."""
    copy = tmp_path / "specs"
    shutil.copytree(bundled_dir(), copy)
    data = yaml.safe_load((copy / "tmas.yaml").read_text(encoding="utf-8"))
    chain = data["nodes"][1]["params"]["spec"]  # the body of each candidate's pipeline
    chain["nodes"] = [n for n in chain["nodes"] if n["id"] != "extract_guideline"]
    for edge in chain["edges"]:
        if edge["from"] == "summarize":
            edge["to"] = ["extract_experience"]
    chain["edges"] = [e for e in chain["edges"] if e["from"] != "extract_guideline"]
    (copy / "tmas.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    config = TMASConfig(**SMALL)
    before = tmas.build_tmas_graph(config, llm=ScriptedChatModel())
    assert "candidate:extract_guideline" in before.get_graph(xray=True).nodes
    monkeypatch.setattr(bundled, "bundled_dir", lambda: copy)
    after = tmas.build_tmas_graph(config, llm=ScriptedChatModel())
    assert "candidate:extract_guideline" not in after.get_graph(xray=True).nodes
    state = after.invoke({"problem": PROBLEM})
    assert "guideline" not in state["usage"] and state["usage"]["experience"]["calls"] == 4


def test_a_copied_and_edited_spec_file_changes_what_python_builds(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    data = yaml.safe_load((bundled_dir() / "tmas.yaml").read_text(encoding="utf-8"))
    data["name"] = "mine"
    data["nodes"][0]["params"] = {"planner": "refine"}  # repair every time, never explore
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    config = {**SMALL, "epsilon": 1.0}
    bundled_modes = tmas.build_graph("tmas", llm=ScriptedChatModel(), config=config).invoke(
        {"problem": PROBLEM}
    )["history"][1]["modes"]
    edited_modes = tmas.build_graph(path, llm=ScriptedChatModel(), config=config).invoke(
        {"problem": PROBLEM}
    )["history"][1]["modes"]
    assert bundled_modes == ["explore", "explore"] and edited_modes == ["exploit", "exploit"]


# ---- the spec's config block, from Python as from the shell --------------------------------


def test_the_spec_config_applies_from_python_as_on_the_command_line(tmp_path: Path) -> None:
    model = ScriptedChatModel()
    voted = tmas.build_graph("majority_vote", llm=model).invoke({"problem": PROBLEM})
    assert len(voted["history"]) == 1  # majority_vote: config {max_iterations: 1}
    refined = tmas.build_graph("self_refine", llm=model, config={"max_iterations": 1})
    state = refined.invoke({"problem": PROBLEM})
    assert len(state["verifications"]) == 4  # n_verifications 1 from the spec, N = 4
    compiled = build_graph(
        bundled.load_bundled("majority_vote"), llm=ModelRouter(model), config=TMASConfig()
    )
    assert len(compiled.invoke({"problem": PROBLEM})["history"]) == 1
    # explicit settings win over the spec's
    three = tmas.build_graph("majority_vote", llm=model, config=TMASConfig(max_iterations=3))
    assert len(three.invoke({"problem": PROBLEM})["history"]) == 3


def test_delm_from_python_finishes_with_a_stop_reason(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    outcome = tmas.solve(PROBLEM, topology="delm", llm=ScriptedChatModel(), db=db, run_id="d")
    assert outcome.state["stop_reason"] == "max_iterations" and outcome.finished
    storage = open_storage(db)
    try:
        manager = RunManager(storage)
        record = manager.registry.get("d")
        assert saved_plan(record).config.max_iterations == 1
        assert manager.status_of(record, outcome.state) == "finished"
    finally:
        storage.close()


def test_run_manager_and_evaluation_apply_the_spec_config(tmp_path: Path) -> None:
    storage = open_storage(tmp_path / "runs.sqlite")
    try:
        manager = RunManager(storage, router_factory=lambda *_: ModelRouter(ScriptedChatModel()))
        outcome = manager.start(
            "mv",
            problem=PROBLEM,
            gold_answer="18",
            plan=plan_run(
                bundled.load_bundled("majority_vote"),
                TMASConfig(n_candidates=3),
                BackendSpec(kind="custom", model="scripted"),
            ),
            show_progress=False,
        )
    finally:
        storage.close()
    assert len(outcome.history) == 1 and len(outcome.history[0]["answers"]) == 3
    summary = tmas.evaluate(
        [{"id": "p", "problem": PROBLEM, "answer": "18"}],
        topology="self_refine",
        llm=ScriptedChatModel(),
        config={"max_iterations": 1},
        out_dir=tmp_path / "eval",
        db=tmp_path / "eval.sqlite",
    )
    assert summary["config"]["n_verifications"] == 1
    assert summary["identity"]["config"]["n_verifications"] == 1


# ---- solve, resume, fork, evaluate --------------------------------------------------------


def test_solve_resume_and_fork_from_python(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
    first = tmas.solve(PROBLEM, llm=model, db=db, config=SMALL, gold="18", run_id="p")
    assert first.final_answer == "18" and first.history[-1]["pass_at_1"] == 1.0
    calls = sum(model.calls.values())
    assert tmas.resume("p", db=db, llm=model).final_answer == "18"
    assert sum(model.calls.values()) == calls  # a finished run makes no call
    child = tmas.fork("p", iteration=1, changes={"epsilon": 1.0}, llm=model, db=db, new_id="c")
    assert child.history[1]["modes"] == ["explore", "explore"]
    assert child.history[0] == first.history[0]


def test_a_run_is_resumed_from_python_with_the_model_passed_again(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    stopped = tmas.solve(
        PROBLEM, llm=ScriptedChatModel(), db=db, config=SMALL, run_id="x", review=lambda state: None
    )  # pause after iteration 1
    assert stopped.paused and len(stopped.history) == 1
    with pytest.raises(tmas.CustomModelError, match="passed from Python"):
        tmas.resume("x", db=db)  # its model cannot be rebuilt from the saved settings
    again = ScriptedChatModel()
    done = tmas.resume("x", db=db, llm=again)
    assert done.finished and len(done.history) == 2
    assert again.calls["solver"] == 2  # iteration 2 was made by the model passed again


def test_the_command_line_refuses_to_resume_a_run_of_a_python_model(tmp_path: Path) -> None:
    home = tmp_path / "home"
    tmas.solve(
        PROBLEM,
        llm=ScriptedChatModel(),
        db=db_path(home),
        config=SMALL,
        run_id="py",
        review=lambda state: None,
    )
    before = digest(db_path(home))
    for args, call in (
        (["resume", "py"], "tmas.resume('py', llm=MODEL)"),
        (["fork", "py", "--iteration", "1"], "tmas.fork('py', iteration=1, llm=MODEL)"),
    ):
        result = invoke(home, *args)
        assert result.exit_code == 2, result.output
        text = " ".join(result.output.split())
        assert "was made with chat models passed from Python (ScriptedChatModel)" in text
        assert call in text
    assert digest(db_path(home)) == before


def test_the_command_line_shows_a_finished_run_of_a_python_model_and_moves_one_to_a_server(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    tmas.solve(PROBLEM, llm=ScriptedChatModel(), db=db_path(home), config=SMALL, run_id="done")
    shown = invoke(home, "resume", "done", "--json")
    assert shown.exit_code == 0 and json.loads(shown.output)["final_answer"] == "18"
    tmas.solve(
        PROBLEM,
        llm=ScriptedChatModel(),
        db=db_path(home),
        config=SMALL,
        run_id="half",
        review=lambda state: None,
    )
    with FakeOpenAIServer() as server:
        moved = invoke(
            home,
            "resume",
            "half",
            "--base-url",
            server.base_url,
            "--model",
            "scripted",
            "--json",
            "--quiet",
        )
        assert moved.exit_code == 0, moved.output
        assert server.request_count == 2 + 2 + 2 * 3  # iteration 2: N solve, N x M, 3 N
    storage = open_storage(db_path(home))
    try:
        assert saved_plan(storage.registry.get("half")).backend.kind == "openai"
    finally:
        storage.close()


def test_evaluate_from_python_writes_what_tmas_eval_writes(tmp_path: Path) -> None:
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
    out = tmp_path / "eval"
    summary = tmas.evaluate(
        "gsm8k",
        limit=2,
        topology="majority_vote",
        llm=model,
        out_dir=out,
        config={"n_candidates": 2},
        db=tmp_path / "runs.sqlite",
    )
    assert summary["problems"] == 2
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [row["selection"] for row in rows] == ["majority_last", "majority_last"]
    assert json.loads((out / "summary.json").read_text())["graph"] == "majority_vote"
    calls = sum(model.calls.values())
    again = tmas.evaluate(
        "gsm8k",
        limit=2,
        topology="majority_vote",
        llm=model,
        out_dir=out,
        config={"n_candidates": 2},
        db=tmp_path / "runs.sqlite",
    )
    assert sum(model.calls.values()) == calls and again["accuracy"] == summary["accuracy"]


# ---- settings reach custom models ---------------------------------------------------------


def test_temperature_and_token_limits_reach_a_custom_model() -> None:
    model, judge = ScriptedChatModel(), ScriptedChatModel()
    config = TMASConfig(
        **SMALL,
        temperature=0.3,
        verifier_max_tokens=77,
        solver_max_tokens=99,
        roles={"verifier": RoleModel(temperature=0.1, max_tokens=55)},
    )
    tmas.build_graph("tmas", llm=model, role_models={"verifier": judge}, config=config).invoke(
        {"problem": PROBLEM}
    )
    solver = [c.kwargs for c in model.calls_of("solver")]
    assert solver and {(k["temperature"], k["max_tokens"]) for k in solver} == {(0.3, 99)}
    checks = [c.kwargs for c in judge.calls_of("verifier")]
    assert checks and {(k["temperature"], k["max_tokens"]) for k in checks} == {(0.1, 55)}
    assert model.calls_of("verifier") == []
    assert len({k["seed"] for k in solver}) == len(solver)  # each candidate its own seed


# ---- the LangGraph server ----------------------------------------------------------------


def test_langgraph_json_exposes_every_bundled_topology_an_endpoint_can_run() -> None:
    listed = json.loads((Path(__file__).parents[1] / "langgraph.json").read_text())["graphs"]
    assert listed == langgraph_graphs()
    internals = {n for n in bundled_names() if spec_needs_internals(load_bundled(n))}
    assert internals == {"latent_mas"}  # hidden states: no endpoint serves them
    assert sorted(listed) == sorted(set(bundled_names()) - internals)
    for name, target in listed.items():
        module, attribute = target.split(":")
        assert module == "./tmas/graphs/served.py" and attribute in FACTORIES, name


@pytest.mark.parametrize("name", ["pacore", "delm", "self_refine"])
def test_a_served_topology_runs_against_the_configured_endpoint(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.store.memory import InMemoryStore

    with FakeOpenAIServer() as server:
        monkeypatch.setenv("TMAS_BASE_URL", server.base_url)
        monkeypatch.setenv("TMAS_MODEL", "scripted")
        graph = served_graph(name)
        if name == "delm":  # the server supplies the store; here we do
            graph.store = InMemoryStore()
        state = graph.invoke(
            {"problem": PROBLEM}, {"recursion_limit": 200, "configurable": {"thread_id": "t"}}
        )
        assert state["stop_reason"] and server.request_count > 0
