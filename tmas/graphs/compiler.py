"""Compiling a run's plan (or a validated topology spec) into a LangGraph ``StateGraph``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from langgraph._internal._runnable import RunnableCallable
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore
from langgraph.types import RetryPolicy

from tmas.config import TMASConfig
from tmas.graphs.call_failures import RequireCandidate, record_failures, retry_policy
from tmas.graphs.edges import add_edge, add_plain_edges
from tmas.graphs.node_guard import GuardedNode, plugin_files
from tmas.graphs.pipeline import bodies, is_pipeline
from tmas.graphs.run_plan import RunPlan
from tmas.graphs.spec import GraphSpec, NodeSpec
from tmas.graphs.traits import after_solvers
from tmas.llm.router import ModelRouter
from tmas.nodes.channels import RUN_STATE_KEYS, ChannelSpec, state_schema
from tmas.nodes.context import NodeContext
from tmas.nodes.prompts import PromptSet
from tmas.registration import registry
from tmas.state import ChainOutput


@dataclass(frozen=True)
class CompileSettings:
    """What every node of one compiled topology shares: the run's config, models (with its
    role bindings), templates and state channels (a run's plan, ready to build nodes from)."""

    config: TMASConfig
    router: ModelRouter
    prompts: PromptSet = field(default_factory=PromptSet)
    channels: Mapping[str, ChannelSpec] = field(default_factory=dict)
    plugins: Mapping[str, str] = field(default_factory=dict)
    """The source file of each plugin of the run -> its reference (naming a plugin's errors)."""

    @classmethod
    def of_plan(cls, plan: RunPlan, router: ModelRouter) -> CompileSettings:
        """The settings a plan compiles with: ``router``'s models serving the plan's own role
        bindings."""
        return cls(plan.config, router.with_bindings(plan.bindings), plan.prompt_set(),
                   plan.channel_specs(), plugin_files(plan.plugin_refs()))  # fmt: skip

    def budgets(self) -> dict[str, int]:
        """Each role's answer budget in the run (its binding's): what task builders see."""
        return {role: binding.max_tokens for role, binding in self.router.bindings.items()}

    def state_keys(self) -> frozenset[str]:
        """What a node may return: the run's state fields and its channels."""
        return RUN_STATE_KEYS | frozenset(self.channels)

    def node_context(self, node: NodeSpec) -> NodeContext:
        """The context of one node: its role is its spec's ``role:``, else its type's own; a
        spec's ``role:`` also serves every call of the node with that role's model."""
        node_type = registry().nodes[node.type]
        role = node.role or node_type.role or "solver"
        router = self.router.for_role(node.role) if node.role else self.router
        return NodeContext(
            config=self.config,
            router=router,
            prompts=self.prompts,
            role=role,
            group=node_type.prompt_group,
            channels=self.channels,
            compile_body=lambda body: compile_body(body, self),
        )


def _retry(node: NodeSpec, config: TMASConfig) -> RetryPolicy | None:
    if node.retry is not None:
        return retry_policy(
            config,
            max_attempts=node.retry.max_attempts,
            initial_interval=node.retry.initial_interval,
        )
    if registry().nodes[node.type].calls_llm:
        return retry_policy(config)
    return None


def _action(node: NodeSpec, spec: GraphSpec, settings: CompileSettings, guarded: bool) -> Any:
    """The node callable: an LLM node records its failed calls; with ``guarded``, a node right
    after a solver stops the run when every solver call failed; every node's updates are
    checked and its errors name it (:class:`tmas.graphs.node_guard.GuardedNode`)."""
    node_type = registry().nodes[node.type]
    context = settings.node_context(node)
    action = node_type.build(context, node.params)
    if node_type.calls_llm:
        action = record_failures(action, node.id, _retry(node, context.config), context.config)
    if guarded and node.id in after_solvers(spec):
        action = RequireCandidate(action)
    if not is_pipeline(node):  # a pipeline's body nodes are guarded themselves
        action = GuardedNode(action, node.id, node.type, settings.state_keys(), settings.plugins)
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


def written_channels(spec: GraphSpec, channels: Mapping[str, ChannelSpec]) -> frozenset[str]:
    """The channels the nodes of ``spec`` (and of its bodies) write.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> written_channels(load_bundled("tmas"), {})
        frozenset()
    """
    names = {
        name
        for node in spec.nodes
        if node.type in registry().nodes
        for name in registry().nodes[node.type].writes
        if name in channels
    }
    for inner in bodies(spec).values():
        names |= written_channels(inner, channels)
    return frozenset(names)


def build_graph(
    spec: GraphSpec,
    settings: CompileSettings,
    *,
    output_schema: type | None = None,
    guarded: bool = True,
) -> StateGraph:
    """The uncompiled graph of a validated ``spec``; ``guarded`` puts the all-solvers-failed
    check after its solvers (a chain's body leaves it to the run's graph)."""
    graph = StateGraph(state_schema(settings.channels), output_schema=output_schema)
    for node in spec.nodes:
        action = _action(node, spec, settings, guarded)
        graph.add_node(node.id, action, retry_policy=_retry(node, settings.config))
    inner = bodies(spec)
    kept_out = {
        node.id: written_channels(inner[node.id], settings.channels)
        for node in spec.nodes
        if is_pipeline(node) and node.id in inner
    }
    for edge in spec.edges:
        if edge.fanout is not None or edge.until is not None:
            add_edge(graph, edge, settings.config, settings.channels, kept_out,
                     settings.budgets())  # fmt: skip
    add_plain_edges(graph, spec)
    return graph


def compile_body(body: GraphSpec, settings: CompileSettings) -> CompiledStateGraph:
    """A pipeline node's body as a subgraph on the run's state that hands back only what a
    chain produces (:data:`tmas.state.ChainOutput`, and the channels its nodes write). It has no
    checkpointer of its own: it saves under its own namespace in the run's, and resumes from
    there.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> body = bodies(load_bundled("tmas"))["candidate"]
        >>> settings = CompileSettings(TMASConfig(), ModelRouter(ScriptedChatModel()))
        >>> sorted(compile_body(body, settings).output_channels)[:2]
        ['call_failures', 'candidates']
    """
    written = {
        name: spec
        for name, spec in settings.channels.items()
        if name in written_channels(body, settings.channels)
    }
    output = state_schema(written, base=ChainOutput)
    return build_graph(body, settings, output_schema=output, guarded=False).compile(name=body.name)


def compile_plan(
    plan: RunPlan,
    router: ModelRouter,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
    store: BaseStore | None = None,
) -> CompiledStateGraph:
    """Compile a run's plan as it is: its topology, config, templates, roles and channels, with
    ``router`` serving its models.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.graphs.run_plan import plan_run
        >>> from tmas.llm.backend import BackendSpec
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> plan = plan_run(load_bundled("majority_vote"), {"n_candidates": 2},
        ...                 BackendSpec(kind="custom", model="scripted"))
        >>> graph = compile_plan(plan, ModelRouter(ScriptedChatModel()))
        >>> graph.invoke({"problem": "9 + 9?"})["final_answer"]
        '18'
    """
    graph = build_graph(plan.topology, CompileSettings.of_plan(plan, router))
    return graph.compile(checkpointer=checkpointer, store=store, name=plan.name)
