"""Every bundled topology runs end to end on the embedded SmolLM2 model (tiny sizes), and
resumes after being interrupted between two steps without repeating finished calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from tmas.api import build_graph
from tmas.config import TMASConfig
from tmas.graphs.bundled import bundled_names, load_bundled
from tmas.graphs.run_plan import plan_router, plan_run
from tmas.graphs.traits import (
    nodes_where,
    spec_needs_internals,
    spec_uses_store,
)
from tmas.llm.backend import BackendSpec
from tmas.storage.checkpointer import open_checkpointer
from tmas.storage.sqlite import connect, open_store

pytestmark = pytest.mark.slow

TINY = {
    "n_candidates": 2,
    "n_verifications": 1,
    "max_iterations": 2,
    "solver_max_tokens": 32,
    "verifier_max_tokens": 16,
    "summary_max_tokens": 16,
    "experience_max_tokens": 24,
    "guideline_max_tokens": 16,
    "max_retries": 0,
}
PROBLEM = {"problem": "Tom has 3 apples and buys 4 more. How many apples?", "gold_answer": "7"}


@pytest.fixture(scope="module")
def smollm2_router():
    config = TMASConfig(**TINY)
    backend = BackendSpec(kind="llamacpp", model="smollm2", n_ctx=2048)
    return plan_router(plan_run(load_bundled("tmas"), config, backend))


def _calls(state: dict) -> int:
    return sum(usage["calls"] for usage in state["usage"].values())


@pytest.mark.parametrize(
    "name", [n for n in bundled_names() if not spec_needs_internals(load_bundled(n))]
)  # latent topologies need the hf backend: tests/nodes/test_agent_chains.py
def test_bundled_topology_runs_and_resumes_on_smollm2(
    name: str, smollm2_router, tmp_path: Path
) -> None:
    spec = load_bundled(name)
    config = TMASConfig(**{**TINY, **spec.config})
    conn = connect(tmp_path / "runs.sqlite")
    store = open_store(conn) if spec_uses_store(spec) else None
    graph = build_graph(
        spec, llm=smollm2_router, config=config, checkpointer=open_checkpointer(conn), store=store
    )

    whole = graph.invoke(PROBLEM, {"configurable": {"thread_id": "whole"}})
    assert whole["stop_reason"] == "max_iterations"
    assert len(whole["history"]) == config.max_iterations
    assert whole["candidates"] and all(c["text"].strip() for c in whole["candidates"])
    assert whole["history"][-1]["pass_at_1"] is not None

    interrupted = {"configurable": {"thread_id": "interrupted"}}
    # A pipeline node's update arrives when one candidate's whole chain (its calls) finished.
    model_nodes = set(nodes_where(spec, "calls_llm"))
    for update in graph.stream(PROBLEM, interrupted, stream_mode="updates"):
        if model_nodes & set(update):  # stop once a model call finished, as a Ctrl-C would
            break
    partial = graph.get_state(interrupted).values
    assert not partial.get("stop_reason") and not partial.get("history"), "should be unfinished"
    resumed = graph.invoke(None, interrupted)
    assert resumed["stop_reason"] == "max_iterations"
    assert len(resumed["history"]) == config.max_iterations
    if store is None:
        # Usage is written with each finished call: a repeated call would be counted twice.
        assert _calls(resumed) == _calls(whole)
    else:
        # Workers' calls follow who claims what; what must hold is that no finished task was
        # worked again after the interruption (each was claimed once and is done).
        tasks = [item.value for item in store.search(("delm", "interrupted", "tasks"))]
        assert tasks and all(t["status"] == "done" and t["claims"] == 1 for t in tasks)
