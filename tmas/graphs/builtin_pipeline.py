"""The ``pipeline`` node type (a body spec run as a subgraph per task) and the
``candidate_tasks`` builder that gives each copy of a candidate's chain one plan."""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph

from tmas.graphs.builtin import per_candidate
from tmas.graphs.pipeline import PIPELINE, body_from, candidate_tasks
from tmas.graphs.registry import NodeContext, register_node, register_tasks

register_tasks("candidate_tasks", count=per_candidate, label="N")(candidate_tasks)


@register_node(PIPELINE)
def _pipeline(ctx: NodeContext, spec: str | dict[str, Any]) -> CompiledStateGraph:
    if ctx.compile_body is None:
        raise ValueError("a pipeline node is built by the topology compiler")
    return ctx.compile_body(body_from(spec, PIPELINE))
