"""The bundled ``tmas`` spec and the hand-wired Python builder build the same graph and run
the same way: same nodes, edges, retries, calls, prompts and results."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from pydantic import PrivateAttr

from tmas.config import TMASConfig
from tmas.graphs import build_tmas_graph
from tmas.graphs.bundled import load_bundled
from tmas.graphs.compiler import compile_spec
from tmas.llm.router import ModelRouter
from tmas.testing.fake_chat import ScriptedChatModel

PROBLEM = "What is 9 + 9?"


class PromptCounter(ScriptedChatModel):
    """A scripted model that also counts each distinct prompt (system, user, seed)."""

    _prompts: Counter = PrivateAttr(default_factory=Counter)
    _prompt_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        key = (tuple(str(m.content) for m in messages), kwargs.get("seed"))
        with self._prompt_lock:
            self._prompts[key] += 1
        return super()._generate(messages, stop, run_manager, **kwargs)

    @property
    def prompts(self) -> Counter:
        with self._prompt_lock:
            return Counter(self._prompts)


def from_spec(config: TMASConfig, model: ScriptedChatModel, **kw: Any) -> CompiledStateGraph:
    router = ModelRouter.for_config(model, None, config)
    return compile_spec(load_bundled("tmas"), config, router, **kw)


def from_builder(config: TMASConfig, model: ScriptedChatModel, **kw: Any) -> CompiledStateGraph:
    return build_tmas_graph(config, llm=model, **kw)


def edges_of(graph: CompiledStateGraph) -> set[tuple[str, str, bool]]:
    return {(e.source, e.target, e.conditional) for e in graph.get_graph().edges}


CONFIG = TMASConfig(n_candidates=3, n_verifications=2, max_iterations=3, epsilon=0.5, seed=11)


def test_same_node_names_in_the_same_order() -> None:
    spec_nodes = list(from_spec(CONFIG, ScriptedChatModel()).get_graph().nodes)
    builder_nodes = list(from_builder(CONFIG, ScriptedChatModel()).get_graph().nodes)
    assert spec_nodes == builder_nodes
    assert "extract_guideline" in spec_nodes and "extract_experience" in spec_nodes


def test_same_edges_plain_and_conditional() -> None:
    spec_edges = edges_of(from_spec(CONFIG, ScriptedChatModel()))
    builder_edges = edges_of(from_builder(CONFIG, ScriptedChatModel()))
    assert spec_edges == builder_edges
    conditional = {(s, t) for s, t, c in spec_edges if c}
    assert conditional == {
        ("start_iteration", "solve"),
        ("candidates_ready", "verify"),
        ("verifications_ready", "summarize"),
        ("summaries_ready", "extract_experience"),
        ("summaries_ready", "extract_guideline"),
        ("record_iteration", "start_iteration"),
        ("record_iteration", "__end__"),
    }
    plain = {(s, t) for s, t, c in spec_edges if not c}
    assert ("__start__", "start_iteration") in plain
    assert ("update_banks", "record_iteration") in plain


@pytest.mark.parametrize("max_retries", [0, 2])
def test_same_retry_policy_per_node(max_retries: int) -> None:
    config = CONFIG.model_copy(update={"max_retries": max_retries})
    spec_nodes = from_spec(config, ScriptedChatModel()).builder.nodes
    builder_nodes = from_builder(config, ScriptedChatModel()).builder.nodes
    assert spec_nodes.keys() == builder_nodes.keys()
    for name in spec_nodes:
        assert spec_nodes[name].retry_policy == builder_nodes[name].retry_policy, name
    llm_nodes = {"solve", "verify", "summarize", "extract_experience", "extract_guideline"}
    with_retry = {name for name, node in spec_nodes.items() if node.retry_policy}
    assert with_retry == (llm_nodes if max_retries else set())


def test_same_graph_name() -> None:
    spec_graph = from_spec(CONFIG, ScriptedChatModel())
    assert spec_graph.name == from_builder(CONFIG, ScriptedChatModel()).name == "tmas"


@pytest.mark.parametrize(
    "config",
    [
        CONFIG,
        TMASConfig(n_candidates=2, n_verifications=1, max_iterations=2, epsilon=0.0, seed=3),
        TMASConfig(n_candidates=4, n_verifications=2, max_iterations=3, epsilon=1.0, seed=5),
    ],
    ids=["mixed", "exploit-only", "explore-only"],
)
def test_same_calls_prompts_and_results_on_a_fake_model(config: TMASConfig) -> None:
    spec_model, builder_model = PromptCounter(), PromptCounter()

    spec_state = from_spec(config, spec_model).invoke({"problem": PROBLEM})
    builder_state = from_builder(config, builder_model).invoke({"problem": PROBLEM})

    n, m, t = config.n_candidates, config.n_verifications, config.max_iterations
    per_role = {"solver": n, "verifier": n * m, "summary": n, "experience": n, "guideline": n}
    assert dict(spec_model.calls) == dict(builder_model.calls)
    assert dict(spec_model.calls) == {role: k * t for role, k in per_role.items()}
    assert spec_model.prompts == builder_model.prompts
    for key in (
        "history",
        "final_answer",
        "stop_reason",
        "experience_bank",
        "guideline_bank",
        "usage",
    ):
        assert spec_state[key] == builder_state[key], key
    assert len(spec_state["history"]) == t
    assert spec_state["final_answer"] is not None


def test_mixed_config_exercises_exploit_and_explore() -> None:
    state = from_spec(CONFIG, ScriptedChatModel()).invoke({"problem": PROBLEM})
    later_modes = {mode for record in state["history"][1:] for mode in record["modes"]}
    assert later_modes == {"exploit", "explore"}
    assert state["guideline_bank"] and state["experience_bank"]


def test_same_checkpoint_sequence() -> None:
    thread = {"configurable": {"thread_id": "eq"}}
    spec_graph = from_spec(CONFIG, ScriptedChatModel(), checkpointer=InMemorySaver())
    builder_graph = from_builder(CONFIG, ScriptedChatModel(), checkpointer=InMemorySaver())
    spec_graph.invoke({"problem": PROBLEM}, thread)
    builder_graph.invoke({"problem": PROBLEM}, thread)

    def steps(graph: CompiledStateGraph) -> list[tuple[int, tuple[str, ...]]]:
        history = list(graph.get_state_history(thread))
        return [(s.metadata["step"], tuple(sorted(s.next))) for s in reversed(history)]

    spec_steps = steps(spec_graph)
    assert spec_steps == steps(builder_graph)
    assert spec_steps[-1][1] == ()  # both ended
    assert spec_graph.get_state(thread).values == builder_graph.get_state(thread).values
