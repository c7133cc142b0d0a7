"""The ``pipeline`` node type (a body spec run as a subgraph per task) and the
``candidate_tasks`` builder that gives each copy of a candidate's chain one plan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tmas.graphs.builtin import per_candidate
from tmas.graphs.pipeline import PIPELINE, body_from, candidate_tasks
from tmas.graphs.registry import NodeContext, register_node, register_tasks
from tmas.state import CHAIN_INPUT_KEYS, CHAIN_OUTPUT_KEYS

if TYPE_CHECKING:  # LangGraph loads when a run starts, not with this module
    from langgraph.graph.state import CompiledStateGraph

register_tasks(
    "candidate_tasks",
    count=per_candidate,
    label="N",
    fields=(*CHAIN_INPUT_KEYS, "plans"),
)(candidate_tasks)


@register_node(PIPELINE, writes=CHAIN_OUTPUT_KEYS)
def _pipeline(ctx: NodeContext, spec: str | dict[str, Any]) -> CompiledStateGraph:
    """Node: a body spec run as a subgraph per task (one candidate's chain), its writes merged
    back once."""
    if ctx.compile_body is None:
        raise ValueError("a pipeline node is built by the topology compiler")
    return ctx.compile_body(body_from(spec, PIPELINE))
