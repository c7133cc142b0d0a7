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
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from tmas.config import ConfigError, TMASConfig
from tmas.graphs.bundled import resolve_spec
from tmas.graphs.compiler import compile_plan
from tmas.graphs.plugin_files import load_plugin
from tmas.graphs.run_plan import RunPlan, plan_router, plan_run
from tmas.graphs.spec import GraphSpec, load_prompt_file, parse_spec
from tmas.graphs.traits import spec_uses_store
from tmas.graphs.validate import validate_spec
from tmas.llm.backend import (
    BackendSpec,
    CustomModelError,
    backend_from_env,
    custom_backend,
)
from tmas.llm.router import ModelRouter

Topology = GraphSpec | str | Path | Mapping[str, Any]
Settings = TMASConfig | Mapping[str, Any] | None
Prompts = Mapping[str, str] | Sequence[str | Path] | None
ChatModels = Mapping[str, BaseChatModel] | None
MAX_PROBLEM_CHARS = 100_000


def load_topology(
    topology: Topology = "tmas", *, plugins: Sequence[str] = (), prompts: Prompts = None
) -> GraphSpec:
    """A validated topology: a bundled name, a spec file (YAML/JSON), a dict of the same
    shape, or a ``GraphSpec``. ``plugins`` (module names or ``.py`` paths) are imported
    first; ``prompts`` overrides prompt templates (a mapping ``group/name`` -> text, or prompt
    files as ``--prompts`` reads them). SpecError lists every problem.

    Example:
        >>> spec = load_topology("tmas", prompts={"solver/system": "Be brief."})
        >>> spec.name, spec.prompts
        ('tmas', {'solver/system': 'Be brief.'})
    """
    for ref in plugins:
        load_plugin(ref)
    if isinstance(topology, GraphSpec):
        spec, source = topology, topology.name
    elif isinstance(topology, Mapping):
        spec = parse_spec(dict(topology))
        source = spec.name
    else:
        spec, source = resolve_spec(str(topology)), str(topology)
    if isinstance(prompts, Mapping):
        spec = spec.with_prompts(dict(prompts))
    else:
        for path in prompts or ():
            spec = spec.with_prompts(load_prompt_file(path))
    return validate_spec(spec, source)


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


def check_problem(text: str) -> str:
    """The problem text, stripped; ConfigError for an empty, oversized or non-UTF-8 one.

    Example:
        >>> check_problem("  What is 9 + 9?\\n")
        'What is 9 + 9?'
        >>> check_problem("x" * (MAX_PROBLEM_CHARS + 1))
        Traceback (most recent call last):
        ...
        tmas.config.ConfigError: the problem is 100,001 characters; the limit is 100,000
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes of a command-line argument
        raise ConfigError("the problem is not UTF-8 text") from None
    if not text.strip():
        raise ConfigError("the problem is empty")
    if len(text) > MAX_PROBLEM_CHARS:
        raise ConfigError(
            f"the problem is {len(text):,} characters; the limit is {MAX_PROBLEM_CHARS:,}"
        )
    return text.strip()


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
