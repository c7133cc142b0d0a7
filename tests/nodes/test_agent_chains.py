"""Agent chains: text_mas passes each agent's notes to the next (scripted model); latent_mas
refuses, when compiled, a model without reachable internals, runs on SmolLM2 through
transformers, and resumes after a crash or a SIGKILL with the answer of an uninterrupted run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from typer.testing import CliRunner

from tmas.api import build_graph
from tmas.cli.app import app
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.settings import topology_config
from tmas.llm.hf.internals import LatentModelError
from tmas.llm.router import ModelRouter
from tmas.testing.fake_chat import ScriptedChatModel, SimulatedCrash
from tmas.testing.fake_openai_server import FakeOpenAIServer

PROBLEM = "Tom has 3 apples and buys 4 more. How many apples does he have?"
AGENTS = ["planner", "critic", "refiner", "judger"]


def test_text_agents_read_the_notes_of_the_agents_before_them() -> None:
    spec = load_bundled("text_mas")
    model = ScriptedChatModel()
    config = topology_config(spec, {"n_candidates": 2})
    state = build_graph(spec, llm=ModelRouter(model), config=config).invoke({"problem": PROBLEM})
    assert [call.role for call in model.log] == [*AGENTS[:3], "judger", "judger"]
    assert "[planner]" not in model.log[0].user
    for number, call in enumerate(model.log[1:4], start=1):
        for earlier in AGENTS[:number]:
            assert f"[{earlier}]\nA reply of the {earlier} agent" in call.user, (call.role, earlier)
    assert state["history"][0]["answers"] and state["final_answer"] in {"17", "18"}
    assert [r["agent"] for r in state["extras"]["agents"]] == AGENTS


def test_latent_agents_refuse_a_model_without_internals_when_compiled() -> None:
    spec = load_bundled("latent_mas")
    with pytest.raises(LatentModelError, match="node 'planner' passes latents.*--backend hf"):
        build_graph(spec, llm=ModelRouter(ScriptedChatModel()), config=topology_config(spec))


def test_the_cli_refuses_latent_mas_on_an_endpoint_and_saves_nothing(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    with FakeOpenAIServer() as server:
        result = CliRunner().invoke(app, ["solve", PROBLEM, "--graph", "latent_mas",
                                          "--base-url", server.base_url, "--model", "scripted",
                                          "--db", str(db), "--quiet"])  # fmt: skip
        assert server.request_count == 0
    assert result.exit_code != 0
    assert "passes latents" in result.output and "Traceback" not in result.output
    listed = CliRunner().invoke(app, ["runs", "--db", str(db)])
    assert "latent_mas" not in listed.output


def test_an_agent_without_a_prompt_is_refused(tmp_path: Path) -> None:
    spec = load_bundled("text_mas")
    data = spec.model_dump(by_alias=True)
    data["nodes"][1]["params"] = {"agent": "nobody"}
    from tmas.graphs.spec import parse_spec

    with pytest.raises(
        ValueError, match=r"node planner \(text_agent\) renders prompts.mas/nobody, which"
    ):
        build_graph(parse_spec(data), llm=ModelRouter(ScriptedChatModel()), config=TMASConfig())


# ---- latent_mas for real (transformers, SmolLM2) -------------------------------------------


def hf_router(config: TMASConfig) -> ModelRouter:
    from tmas.graphs.run_plan import plan_router, plan_run
    from tmas.llm.backend import BackendSpec

    return plan_router(
        plan_run(load_bundled("latent_mas"), config, BackendSpec(kind="hf", model="smollm2"))
    )


@pytest.mark.slow
def test_latent_mas_runs_and_resumes_after_a_crash_rebuilding_its_trace(monkeypatch) -> None:
    import transformers  # noqa: F401 - the train extra, which the test command installs

    from tmas.llm.hf.trace_store import TRACES
    from tmas.nodes.agents.latent_agents import LatentAgent

    spec = load_bundled("latent_mas")
    short = {"judger": {"max_tokens": 48}}
    config = topology_config(spec, {"n_candidates": 2, "temperature": 0.0, "roles": short})
    reference = build_graph(spec, llm=hf_router(config), config=config).invoke({"problem": PROBLEM})
    records = reference["extras"]["agents"]
    assert [r["agent"] for r in records] == AGENTS
    segments = [r["segment"]["latent_steps"] + len(r["segment"]["prompt_ids"]) for r in records[:3]]
    assert [r["cache_length"] for r in records[:3]] == [sum(segments[: i + 1]) for i in range(3)]
    assert records[3]["cache_length"] == sum(segments)
    assert len(reference["candidates"]) == 2 and reference["candidates"][0]["text"].strip()

    real = LatentAgent.__call__
    crashed = []

    def crash_once_in_the_critic(self, state):  # noqa: ANN001
        if self.agent == "critic" and not crashed:
            crashed.append(True)
            raise SimulatedCrash("the process dies in the critic")
        return real(self, state)

    monkeypatch.setattr(LatentAgent, "__call__", crash_once_in_the_critic)
    saver, thread = InMemorySaver(), {"configurable": {"thread_id": "crash"}}
    graph = build_graph(spec, llm=hf_router(config), config=config, checkpointer=saver)
    with pytest.raises(SimulatedCrash):
        graph.invoke({"problem": PROBLEM}, thread)
    TRACES.clear()  # as a new process starts
    rebuilt = TRACES.rebuilt_segments
    resumed = graph.invoke(None, thread)
    assert TRACES.rebuilt_segments > rebuilt  # the planner's segment was recomputed
    assert [c["text"] for c in resumed["candidates"]] == [
        c["text"] for c in reference["candidates"]
    ]
    assert resumed["final_answer"] == reference["final_answer"]


def solve_command(db: Path, run_id: str) -> list[str]:
    return [sys.executable, "-m", "tmas.cli", "solve", PROBLEM, "--graph", "latent_mas",
            "--backend", "hf", "--model", "smollm2", "--set", "temperature=0", "-n", "1",
            "--db", str(db), "--run-id", run_id, "--quiet"]  # fmt: skip


def saved(db: Path, run_id: str) -> dict:
    from tmas.lifecycle.history import saved_state
    from tmas.storage.sqlite import connect

    return saved_state(connect(db), run_id)


@pytest.mark.slow
def test_latent_mas_killed_mid_chain_resumes_to_the_uninterrupted_answer(tmp_path: Path) -> None:
    import transformers  # noqa: F401 - the train extra, which the test command installs

    env_db = tmp_path / "runs.sqlite"
    subprocess.run(solve_command(env_db, "whole"), check=True, capture_output=True, timeout=600)
    whole = saved(env_db, "whole")

    proc = subprocess.Popen(
        solve_command(env_db, "killed"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            agents = (saved(env_db, "killed").get("extras") or {}).get("agents", [])
        except Exception:  # noqa: BLE001 - not registered yet
            agents = []
        if agents:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before the first agent's checkpoint was seen"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    partial = saved(env_db, "killed")
    assert not partial.get("stop_reason") and partial["extras"]["agents"]

    resumed = subprocess.run(
        [sys.executable, "-m", "tmas.cli", "resume", "killed", "--db", str(env_db), "--quiet"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    state = saved(env_db, "killed")
    assert state["stop_reason"] == whole["stop_reason"] == "max_iterations"
    assert [c["text"] for c in state["candidates"]] == [c["text"] for c in whole["candidates"]]
    assert state["final_answer"] == whole["final_answer"]
    assert json.dumps(state["extras"]["agents"]) == json.dumps(whole["extras"]["agents"])
