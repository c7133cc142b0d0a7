"""Compiling a validated topology spec into a LangGraph ``StateGraph``."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from langgraph._internal._runnable import RunnableCallable
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.types import RetryPolicy, Send

from tmas.config import TMASConfig
from tmas.graphs import spec as spec_names
from tmas.graphs.call_failures import RequireCandidate, record_failures, retry_policy
from tmas.graphs.catalog import NODE_TYPES, TASK_BUILDERS
from tmas.graphs.pipeline import bodies
from tmas.graphs.registry import NodeContext
from tmas.graphs.settings import topology_config
from tmas.graphs.spec import EdgeSpec, FanOut, GraphSpec, NodeSpec
from tmas.graphs.validate import plain_sources, validate_spec
from tmas.llm.router import ModelRouter
from tmas.nodes.control.stop_rules import (
    RecordStop,
    early_conditions,
    first_holding,
    run_finished,
)
from tmas.nodes.prompts import PromptSet
from tmas.state import ChainOutput, RunState


def _endpoint(name: str) -> str:
    return {spec_names.START: START, spec_names.END: END}.get(name, name)


def _retry(node: NodeSpec, config: TMASConfig) -> RetryPolicy | None:
    if node.retry is not None:
        return retry_policy(
            config,
            max_attempts=node.retry.max_attempts,
            initial_interval=node.retry.initial_interval,
        )
    if NODE_TYPES[node.type].calls_llm:
        return retry_policy(config)
    return None


def _action(node: NodeSpec, spec: GraphSpec, context: NodeContext, guarded: bool) -> Any:
    """The node callable: an LLM node records its failed calls; with ``guarded``, a node right
    after a solver stops the run when every solver call failed."""
    node_type = NODE_TYPES[node.type]
    action = node_type.build(context, node.params)
    if node_type.calls_llm:
        action = record_failures(action, node.id, _retry(node, context.config), context.config)
    if guarded and node.id in after_solvers(spec):
        action = RequireCandidate(action)
    return with_async(action, node.id)


def with_async(action: Any, name: str) -> Any:
    """A node that has an ``acall`` as a LangGraph runnable with both ways to run: called in
    a thread by ``invoke``/``stream``, awaited on the event loop by ``ainvoke``/``astream``
    (so its model calls are async ones). Any other node is left to LangGraph (which runs a
    plain function in a thread under ``astream``).

    Example:
        >>> from tmas.graphs.call_failures import RequireCandidate
        >>> type(with_async(RequireCandidate(print), "update_banks")).__name__
        'RunnableCallable'
        >>> with_async(print, "update_banks") is print
        True
    """
    acall = getattr(action, "acall", None)
    if acall is None:
        return action
    return RunnableCallable(action, acall, name=name, trace=False)


def nodes_where(spec: GraphSpec, trait: str) -> list[str]:
    """Ids of the spec's nodes whose type has ``trait`` (a flag of :class:`NodeType`), in
    declaration order; a pipeline node has it when a node of its body has it.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> nodes_where(load_bundled("tmas"), "ends_iteration")
        ['record_iteration']
        >>> nodes_where(load_bundled("tmas"), "produces_candidates")
        ['candidate']
    """
    inner = {node_id: bool(nodes_where(body, trait)) for node_id, body in bodies(spec).items()}
    return [
        node.id
        for node in spec.nodes
        if inner.get(node.id)
        or (node.type in NODE_TYPES and getattr(NODE_TYPES[node.type], trait))
    ]


def after_solvers(spec: GraphSpec) -> set[str]:
    """The nodes a plain edge leads to from a solver node (where no candidate is an error).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> after_solvers(load_bundled("tmas_barrier")), after_solvers(load_bundled("tmas"))
        ({'candidates_ready'}, {'update_banks'})
    """
    solvers = set(solver_nodes(spec))
    return {target for target, sources in plain_sources(spec).items() if solvers & set(sources)}


def solver_nodes(spec: GraphSpec) -> list[str]:
    """Ids of the nodes that write the candidates (types registered ``produces_candidates``,
    and pipelines whose body has one).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> solver_nodes(load_bundled("tmas_barrier")), solver_nodes(load_bundled("tmas"))
        (['solve'], ['candidate'])
    """
    return nodes_where(spec, "produces_candidates")


def fanout_payloads(fanout: FanOut, state: dict[str, Any], config: TMASConfig) -> list[dict]:
    """The task payloads one fan-out edge sends (to each of its targets).

    Example:
        >>> fanout_payloads(FanOut(copies=2), {"problem": "p", "iteration": 1}, TMASConfig())
        [{'problem': 'p', 'iteration': 1, 'copy': 0}, {'problem': 'p', 'iteration': 1, 'copy': 1}]
    """
    if fanout.tasks is not None:
        return TASK_BUILDERS[fanout.tasks](state, config)
    base = {"problem": state.get("problem"), "iteration": state.get("iteration")}
    if fanout.over is not None:
        return [
            {**base, "item": item, "index": i}
            for i, item in enumerate(state.get(fanout.over) or [])
        ]
    return [{**base, "copy": i} for i in range(fanout.copies or 0)]


def stop_node(source: str) -> str:
    """The name of the node through which the loop leaving ``source`` exits when a condition
    other than ``run_finished`` ended it (it records the stop reason). A loop also ends once a
    node set a stop reason, whether or not its ``until`` lists ``run_finished``.

    Example:
        >>> stop_node("record_iteration")
        'record_iteration.stop'
    """
    return f"{source}.stop"


def _add_loop(graph: StateGraph, edge: EdgeSpec) -> None:
    source, back_to, exit_to = _endpoint(edge.source), edge.targets[0], _endpoint(edge.exit)
    early = early_conditions(edge.conditions)
    via = stop_node(edge.source)
    if early:  # the stop node exists only where a condition can end the loop early
        graph.add_node(via, RecordStop(early))
        graph.add_edge(via, exit_to)

    def route(state: dict[str, Any]) -> str:
        if run_finished(state):  # a node set the stop reason (max_iterations): done
            return exit_to
        return via if first_holding(early, state) else back_to

    graph.add_conditional_edges(source, route, [back_to, exit_to, *([via] if early else [])])


def _add_edge(graph: StateGraph, edge: EdgeSpec, config: TMASConfig) -> None:
    if edge.until is not None:
        _add_loop(graph, edge)
    elif edge.fanout is not None:
        source = _endpoint(edge.source)
        targets = [_endpoint(t) for t in edge.targets]
        fanout = edge.fanout

        def route(state: dict[str, Any]) -> list[Send]:
            return [Send(t, p) for p in fanout_payloads(fanout, state, config) for t in targets]

        graph.add_conditional_edges(source, route, targets)


def _add_plain_edges(graph: StateGraph, spec: GraphSpec) -> None:
    """One edge per target: from its only source, or a join that waits for all of them."""
    for target, sources in plain_sources(spec).items():
        ends = [_endpoint(source) for source in sources]
        graph.add_edge(ends[0] if len(ends) == 1 else ends, _endpoint(target))


def build_graph(
    spec: GraphSpec,
    config: TMASConfig,
    router: ModelRouter,
    prompts: PromptSet,
    *,
    state_schema: type = RunState,
    output_schema: type | None = None,
    guarded: bool = True,
) -> StateGraph:
    """The uncompiled graph of a validated ``spec``; ``guarded`` puts the all-solvers-failed
    check after its solvers (a chain's body leaves it to the run's graph)."""
    graph = StateGraph(state_schema, output_schema=output_schema)
    for node in spec.nodes:
        node_router = router.for_role(node.role) if node.role else router
        context = NodeContext(config=config, router=node_router, prompts=prompts)
        context = replace(context, compile_body=functools.partial(compile_body, context=context))
        action = _action(node, spec, context, guarded)
        graph.add_node(node.id, action, retry_policy=_retry(node, config))
    for edge in spec.edges:
        if edge.fanout is not None or edge.until is not None:
            _add_edge(graph, edge, config)
    _add_plain_edges(graph, spec)
    return graph


def compile_body(body: GraphSpec, context: NodeContext) -> CompiledStateGraph:
    """A pipeline node's body as a subgraph on the run's state that hands back only what a
    chain produces (:data:`tmas.state.ChainOutput`). It has no checkpointer of its own: it
    saves under its own namespace in the run's, and resumes from there.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.graphs.pipeline import bodies
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> body = bodies(load_bundled("tmas"))["candidate"]
        >>> context = NodeContext(TMASConfig(), ModelRouter(ScriptedChatModel()))
        >>> sorted(compile_body(body, context).output_channels)[:2]
        ['call_failures', 'candidates']
    """
    graph = build_graph(
        body,
        context.config,
        context.router,
        context.prompts,
        output_schema=ChainOutput,
        guarded=False,
    )
    return graph.compile(name=body.name)


def compile_spec(
    spec: GraphSpec,
    config: TMASConfig | Mapping[str, Any] | None,
    router: ModelRouter,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
    store: BaseStore | None = None,
    state_schema: type = RunState,
) -> CompiledStateGraph:
    """Validate ``spec`` and compile it with the given models and checkpointer; its config is
    the spec's ``config:`` block under the settings ``config`` gives
    (:func:`tmas.graphs.settings.topology_config`).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> router = ModelRouter(ScriptedChatModel())
        >>> graph = compile_spec(load_bundled("majority_vote"), {"n_candidates": 3}, router)
        >>> [len(record["answers"]) for record in graph.invoke({"problem": "9 + 9?"})["history"]]
        [3]
    """
    validate_spec(spec)
    config = topology_config(spec, config).check_roles()
    graph = build_graph(
        spec, config, router, PromptSet(spec.prompts), state_schema=state_schema
    )
    return graph.compile(checkpointer=checkpointer, store=store, name=spec.name)


def spec_uses_store(spec: GraphSpec) -> bool:
    """Whether a topology's nodes share a LangGraph store while they run (a node type
    registered ``needs_store``).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> spec_uses_store(load_bundled("delm")), spec_uses_store(load_bundled("tmas"))
        (True, False)
    """
    return bool(nodes_where(spec, "needs_store"))


def spec_needs_internals(spec: GraphSpec) -> bool:
    """Whether a topology's nodes read the model's internals (hidden states, KV cache), so
    that only an in-process model (``--backend hf``) can run it.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> spec_needs_internals(load_bundled("latent_mas")), spec_needs_internals(
        ...     load_bundled("text_mas"))
        (True, False)
    """
    return bool(nodes_where(spec, "needs_internals"))
