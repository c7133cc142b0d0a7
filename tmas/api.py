"""The Python API: load a topology, build its graph with any LangChain chat model, and solve,
resume, fork and evaluate saved runs. The command line resolves topologies and their settings
with the same functions, so a topology behaves the same from Python and from the shell.

Example:
    >>> import tmas
    >>> from tmas.testing.fake_chat import ScriptedChatModel
    >>> graph = tmas.build_graph("majority_vote", llm=ScriptedChatModel(),
    ...                          config={"n_candidates": 3})
    >>> state = graph.invoke({"problem": "What is 9 + 9?"})
    >>> len(state["history"]), state["selection"]  # the spec's own rounds and answer rule
    (1, 'majority_last')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from tmas.config import TMASConfig
from tmas.graphs.compiler import compile_plan
from tmas.graphs.inputs import MAX_PROBLEM_CHARS, Prompts, Topology, check_problem, load_topology
from tmas.graphs.run_plan import RunPlan, plan_router, plan_run
from tmas.graphs.traits import spec_uses_store
from tmas.llm.backend import (
    BackendSpec,
    CustomModelError,
    backend_from_env,
    custom_backend,
)
from tmas.llm.router import ModelRouter

Settings = TMASConfig | Mapping[str, Any] | None
ChatModels = Mapping[str, BaseChatModel] | None


def saved_backend(
    llm: BaseChatModel | ModelRouter | None = None,
    role_models: ChatModels = None,
    backend: BackendSpec | Mapping[str, Any] | None = None,
) -> BackendSpec:
    """The backend a run saves: chat models a caller passes (a ``custom`` backend: they cannot
    be rebuilt from it), or backend settings (by default ``TMAS_BASE_URL``/``TMAS_MODEL`` when
    set, else the embedded llama.cpp model), resolved.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> saved_backend(ScriptedChatModel()).kind, saved_backend(backend={"model": "qwen"}).model
        ('custom', 'qwen')
    """
    if isinstance(llm, ModelRouter):
        if role_models:
            raise ValueError("pass role_models to the ModelRouter, not beside it")
        return custom_backend(llm.main, llm.overrides)
    if llm is not None:
        if backend is not None:
            raise ValueError("pass either llm (chat models) or backend (settings), not both")
        return custom_backend(llm, role_models)
    if role_models:
        raise ValueError("role_models needs llm, the main chat model")
    if backend is None:
        return backend_from_env()
    chosen = backend if isinstance(backend, BackendSpec) else BackendSpec(**dict(backend))
    return chosen.resolved()


def models_router(
    plan: RunPlan,
    llm: BaseChatModel | ModelRouter | None = None,
    role_models: ChatModels = None,
    *,
    pass_generation_kwargs: bool = True,
) -> ModelRouter:
    """The router that serves a run of ``plan``: the chat models a caller passes (``llm``,
    with ``role_models`` for some roles; a ``ModelRouter`` as it is), or the models of the
    plan's backend (:func:`tmas.graphs.run_plan.plan_router`); either way each call is made
    with its role's binding in the plan (temperature, budget), custom models too.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> plan = plan_run(load_topology("tmas"), {"temperature": 0.3},
        ...                 saved_backend(ScriptedChatModel()))
        >>> models_router(plan, ScriptedChatModel()).temperature_for("verifier")
        0.3
    """
    if isinstance(llm, ModelRouter):
        return llm.with_bindings(plan.bindings)
    if llm is not None:
        return ModelRouter(llm, role_models, bindings=plan.bindings,
                           pass_generation_kwargs=pass_generation_kwargs)  # fmt: skip
    return plan_router(plan)  # CustomModelError for a plan of models passed from Python


def plan_with_models(
    topology: Topology = "tmas",
    config: Settings = None,
    *,
    llm: BaseChatModel | ModelRouter | None = None,
    role_models: ChatModels = None,
    backend: BackendSpec | Mapping[str, Any] | None = None,
    plugins: Sequence[str] = (),
    prompts: Prompts = None,
    pass_generation_kwargs: bool = True,
) -> tuple[RunPlan, ModelRouter]:
    """A run's plan (:func:`tmas.graphs.run_plan.plan_run`: the one place a run's settings are
    resolved) and the router that serves its models (:func:`models_router`), from what a
    Python caller gives.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> plan, router = plan_with_models("majority_vote", {"n_candidates": 3},
        ...                                 llm=ScriptedChatModel())
        >>> plan.config.n_candidates, plan.backend.kind, router.temperature_for("solver")
        (3, 'custom', 0.7)
    """
    spec = load_topology(topology, plugins=plugins, prompts=prompts)
    plan = plan_run(spec, config, saved_backend(llm, role_models, backend), plugins)
    router = models_router(plan, llm, role_models, pass_generation_kwargs=pass_generation_kwargs)
    return plan, router


def build_graph(
    topology: Topology = "tmas",
    *,
    llm: BaseChatModel | ModelRouter | None = None,
    role_models: ChatModels = None,
    backend: BackendSpec | Mapping[str, Any] | None = None,
    config: Settings = None,
    checkpointer: BaseCheckpointSaver | None = None,
    store: BaseStore | None = None,
    plugins: Sequence[str] = (),
    prompts: Prompts = None,
    max_parallel_calls: int | None = None,
    pass_generation_kwargs: bool = True,
) -> CompiledStateGraph:
    """Compile a topology (see :func:`load_topology`) into a LangGraph graph.

    Args:
        topology: bundled name, spec file, dict or ``GraphSpec``.
        llm: any langchain-core chat model (or a ``ModelRouter``); None uses ``backend``.
        role_models: chat models for some roles (``{"verifier": judge}``), beside ``llm``.
        backend: backend settings (``BackendSpec`` or dict) when no ``llm`` is given.
        config: a ``TMASConfig`` or a dict; the spec's ``config:`` block fills what it does
            not set, exactly as on the command line.
        checkpointer: where checkpoints go (needed to resume); None keeps none.
        store: the LangGraph store of topologies whose nodes share one (DeLM); an in-memory
            one when None.
        plugins, prompts: as for :func:`load_topology`.
        max_parallel_calls: at most this many model calls in flight.
        pass_generation_kwargs: send ``max_tokens``, ``seed`` and ``temperature`` with each
            call; turn off for a chat model that rejects them.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel, ScriptedReplies
        >>> model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
        >>> graph = build_graph("tmas", llm=model, config={"n_candidates": 2,
        ...                     "n_verifications": 1, "max_iterations": 1})
        >>> graph.invoke({"problem": "What is 9 + 9?"})["final_answer"]
        '18'
    """
    plan, router = plan_with_models(
        topology,
        config,
        llm=llm,
        role_models=role_models,
        backend=backend,
        plugins=plugins,
        prompts=prompts,
        pass_generation_kwargs=pass_generation_kwargs,
    )
    if max_parallel_calls is not None:
        router = router.limited_to(max_parallel_calls)
    if store is None and spec_uses_store(plan.topology):
        store = InMemoryStore()
    return compile_plan(plan, router, checkpointer=checkpointer, store=store)


def build_tmas_graph(
    config: Settings = None,
    *,
    llm: BaseChatModel | ModelRouter,
    role_models: ChatModels = None,
    checkpointer: BaseCheckpointSaver | None = None,
    pass_generation_kwargs: bool = True,
) -> CompiledStateGraph:
    """The bundled TMAS topology compiled with ``llm``: ``build_graph("tmas", ...)``.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> graph = build_tmas_graph(TMASConfig(n_candidates=2, n_verifications=1,
        ...                                     max_iterations=1), llm=ScriptedChatModel())
        >>> graph.invoke({"problem": "What is 9 + 9?"})["stop_reason"]
        'max_iterations'
    """
    return build_graph(
        "tmas",
        llm=llm,
        role_models=role_models,
        config=config,
        checkpointer=checkpointer,
        pass_generation_kwargs=pass_generation_kwargs,
    )


def router_factory(
    llm: BaseChatModel | ModelRouter | None, role_models: ChatModels = None
) -> Callable[[RunPlan], ModelRouter]:
    """What a ``RunManager`` builds a run's models with: the given chat models, or (None) the
    run's saved backend (:func:`models_router`); a run saved with chat models from Python
    needs them passed again.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> plan = plan_run(load_topology("tmas"), None, saved_backend(ScriptedChatModel()))
        >>> router_factory(None)(plan)
        Traceback (most recent call last):
        ...
        tmas.llm.backend.CustomModelError: the models of this run were passed from Python ...
    """
    return lambda plan: models_router(plan, llm, role_models)


__all__ = [
    "MAX_PROBLEM_CHARS",
    "CustomModelError",
    "build_graph",
    "build_tmas_graph",
    "check_problem",
    "load_topology",
    "models_router",
    "plan_with_models",
    "router_factory",
    "saved_backend",
]
