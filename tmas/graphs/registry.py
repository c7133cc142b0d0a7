"""Registering node types and fan-out task builders (in the registry,
:func:`tmas.registration.registry`, beside planners, stop conditions, selection rules, channels,
similarities, roles and prompts).

Built-in entries come from ``tmas.graphs.builtin`` (loaded by the registry's constructor);
users add their own from any module, through the public plugin API::

    from tmas.plugin import register_node

    @register_node("shout")
    def make_shout(ctx, suffix: str = "!"):
        return lambda state: {"final_answer": (state.get("final_answer") or "") + suffix}

and load it with ``tmas solve --plugin my_module`` (or ``--plugin ./my_module.py``), or
``load_plugin("my_module")``. A node factory's keyword parameters are the node's ``params:``
in a spec; their names and annotated types are checked with the spec, before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tmas.config import TMASConfig
from tmas.graphs.plugin_files import load_plugin
from tmas.nodes.channels import register_channel
from tmas.nodes.context import NodeContext
from tmas.nodes.control.planners import PlanChoice, PlanRequest, register_planner
from tmas.nodes.control.selection_rules import SelectionRequest, register_selection
from tmas.nodes.control.stop_rules import register_stop
from tmas.nodes.parameters import keyword_problems
from tmas.nodes.prompts import register_prompts
from tmas.nodes.tasks import TaskBuilder, TaskRequest, as_request_builder
from tmas.registration import declare, owner_of, registry
from tmas.roles import register_role

__all__ = [
    "NodeContext",
    "NodeType",
    "PlanChoice",
    "PlanRequest",
    "SelectionRequest",
    "TaskEntry",
    "TaskRequest",
    "TaskSize",
    "load_plugin",
    "node_type",
    "register_channel",
    "register_node",
    "register_planner",
    "register_prompts",
    "register_role",
    "register_selection",
    "register_stop",
    "register_tasks",
    "task_entry",
]

NodeFactory = Callable[..., Callable[[Any], dict[str, Any]]]
CallBound = Callable[[dict[str, Any], TMASConfig], int]
TaskCount = Callable[[TMASConfig, int], int]
ParamCheck = Callable[[Mapping[str, Any]], list[str]]


@dataclass(frozen=True)
class TaskSize:
    """How many tasks a builder sends: ``count(config, width)`` in an iteration of ``width``
    candidates (for progress totals), and ``label`` for diagrams (e.g. ``N x M``)."""

    count: TaskCount
    label: str


@dataclass(frozen=True)
class NodeType:
    """A registered node type: its factory and what the engine needs to know about it.

    ``calls_llm``: gets the run's retry policy and counts one model call per run (or at most
    ``max_calls(params, config)``); ``needs_store``: its nodes share the run's LangGraph store;
    ``needs_internals``: it reads the model's hidden states or KV cache (an in-process model,
    not an endpoint);
    ``produces_candidates``: it writes the iteration's candidates (the node after it stops the
    run when every call failed, and a resume makes those calls again); ``ends_iteration``: an
    iteration is over after it (a reviewed run pauses there, a fork starts there);
    ``starts_iteration``: it opens an iteration (clears its lists), so no pipeline body may
    hold it; ``check_params``: extra checks of its parameters beyond names and types.

    What it reads and writes: ``role``, its role when its spec gives none (model, budget,
    usage row, prompt namespace), and ``group``, where the prompts its role lacks are found
    (default: ``role``); ``prompts``, the templates it renders (name -> the fields it computes
    for them beyond those its task carries; ``*`` stands for any other template of its
    namespace); ``reads`` and ``writes``, the state channels it uses (a plugin channel it
    names is added to the state of every topology using the node). The spec validator checks
    each template a node renders against these before anything runs.
    """

    name: str
    factory: NodeFactory
    calls_llm: bool = False
    max_calls: CallBound | None = None
    needs_store: bool = False
    produces_candidates: bool = False
    ends_iteration: bool = False
    check_params: ParamCheck | None = None
    needs_internals: bool = False
    starts_iteration: bool = False
    role: str | None = None
    group: str | None = None
    prompts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()

    @property
    def prompt_group(self) -> str | None:
        """Where this type's prompts are found when a node's role lacks them."""
        return self.group or self.role

    def build(self, context: NodeContext, params: Mapping[str, Any]) -> Any:
        """The node callable for one spec node."""
        return self.factory(context, **params)

    def param_problems(self, params: Mapping[str, Any]) -> list[str]:
        """What is wrong with a node's ``params``: names the factory does not take, values of
        the wrong type, missing required ones, and what ``check_params`` finds.

        Example:
            >>> node_type("record_iteration").param_problems({"selection": "vote_last", "k": 2})
            ["parameter 'k' is not taken (it takes: selection)"]
            >>> node_type("start_iteration").param_problems({"planner": "refine", "k": 2})
            ["planner 'refine': option 'k' is not taken (it takes: none)"]
        """
        problems = keyword_problems(self.factory, params, what="parameter")
        if not problems and self.check_params is not None:
            problems += self.check_params(params)
        return problems


@dataclass(frozen=True)
class TaskEntry:
    """A registered task builder: ``build(request) -> task payloads``, how many tasks it sends
    (``size``: None when it does not say) and the fields every task carries (``fields``: None
    when it does not say)."""

    build: TaskBuilder
    size: TaskSize | None = None
    fields: tuple[str, ...] | None = None


def node_type(name: str) -> NodeType:
    """The node type registered as ``name``; ValueError naming the known ones otherwise.

    Example:
        >>> node_type("solve").role
        'solver'
    """
    return registry().nodes[name]  # type: ignore[no-any-return]


def task_entry(name: str) -> TaskEntry:
    """The task builder registered as ``name``; ValueError naming the known ones otherwise.

    Example:
        >>> task_entry("verification_tasks").size.label
        'N x M'
    """
    return registry().tasks[name]  # type: ignore[no-any-return]


def register_node(
    name: str,
    *,
    calls_llm: bool = False,
    max_calls: CallBound | None = None,
    needs_store: bool = False,
    produces_candidates: bool = False,
    ends_iteration: bool = False,
    check_params: ParamCheck | None = None,
    needs_internals: bool = False,
    starts_iteration: bool = False,
    role: str | None = None,
    group: str | None = None,
    prompts: Mapping[str, Sequence[str]] | None = None,
    reads: Sequence[str] = (),
    writes: Sequence[str] = (),
) -> Callable[[NodeFactory], NodeFactory]:
    """Register a node factory ``(ctx: NodeContext, **params) -> node callable`` as ``name``
    (in :func:`tmas.registration.registry`).

    The node callable takes the state (or its fan-out task) and returns a state update. What
    the flags and declarations mean: see :class:`NodeType`. Registering the same factory again
    is harmless; another one under a name another module holds is refused.

    Example:
        >>> @register_node("doc_example_noop")
        ... def make_noop(ctx, **params):
        ...     return lambda state: {}
        >>> node_type("doc_example_noop").calls_llm
        False
    """

    def decorate(factory: NodeFactory) -> NodeFactory:
        entry = NodeType(
            name,
            factory,
            calls_llm=calls_llm,
            max_calls=max_calls,
            needs_store=needs_store,
            produces_candidates=produces_candidates,
            ends_iteration=ends_iteration,
            check_params=check_params,
            needs_internals=needs_internals,
            starts_iteration=starts_iteration,
            role=role,
            group=group,
            prompts={key: tuple(fields) for key, fields in (prompts or {}).items()},
            reads=tuple(reads),
            writes=tuple(writes),
        )
        declare("nodes", name, entry, owner_of(factory))
        return factory

    return decorate


def register_tasks(
    name: str,
    *,
    count: TaskCount | None = None,
    label: str = "?",
    fields: Sequence[str] | None = None,
) -> Callable[[Callable[..., list[dict[str, Any]]]], Any]:
    """Register a fan-out task builder ``(request: TaskRequest) -> list of task payloads`` (a
    builder of ``(state, config)``, written before requests, is adapted once, here).

    ``count(config, width)`` says how many tasks it sends in an iteration of ``width``
    candidates when no model call failed (progress totals are exact then; without it they
    count one task per candidate and say "about"); ``label`` names that number in diagrams;
    ``fields`` names the keys every task carries (the prompts of the nodes it feeds may use
    them; without it their prompts are not checked against it).

    Example:
        >>> @register_tasks("doc_example_pairs", count=lambda config, width: 2 * width,
        ...                 label="2N")
        ... def pairs(request):
        ...     return [{"problem": request.state["problem"], "copy": i} for i in range(2)]
        >>> task_entry("doc_example_pairs").size.label
        '2N'
    """

    def decorate(builder: Callable[..., list[dict[str, Any]]]) -> Any:
        size = TaskSize(count, label) if count is not None else None
        entry = TaskEntry(as_request_builder(builder), size,
                          tuple(fields) if fields is not None else None)  # fmt: skip
        declare("tasks", name, entry, owner_of(builder))
        return builder

    return decorate
