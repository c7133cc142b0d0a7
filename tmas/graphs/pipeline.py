"""Pipeline nodes: a node whose body is another spec, run as a LangGraph subgraph per task.

A fan-out into a pipeline node runs one copy of its body per task, each advancing on its own;
whatever follows the pipeline node waits for all of them. The body is given as
``params: {spec: ...}``: a bundled topology's name, a spec file's path, or an inline
``{nodes: [...], edges: [...]}`` block whose START and END are the chain's ends::

    - id: candidate
      type: pipeline
      params:
        spec:
          nodes: [{id: solve, type: solve, role: solver}, {id: verify, type: verify}]
          edges:
            - {from: START, to: solve, fanout: {tasks: solver_tasks}}
            - {from: solve, to: verify, fanout: {tasks: verification_tasks}}
            - {from: verify, to: END}

The body runs on the run's state schema and hands back only what a chain produces
(:data:`tmas.state.CHAIN_OUTPUT_KEYS`); ``candidate_tasks`` gives each copy one plan.
"""

from __future__ import annotations

from typing import Any

from tmas.graphs.spec import GraphSpec, NodeSpec, SpecError, parse_spec
from tmas.nodes.channels import RUN_STATE_KEYS
from tmas.nodes.tasks import TaskRequest
from tmas.state import CHAIN_INPUT_KEYS

PIPELINE = "pipeline"
"""The node type whose body is a spec."""


def is_pipeline(node: NodeSpec) -> bool:
    """Whether ``node`` runs a body spec.

    Example:
        >>> is_pipeline(NodeSpec(id="c", type="pipeline"))
        True
    """
    return node.type == PIPELINE


def pipeline_nodes(spec: GraphSpec) -> list[str]:
    """Ids of the spec's pipeline nodes (one level).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> pipeline_nodes(load_bundled("tmas")), pipeline_nodes(load_bundled("tmas_barrier"))
        (['candidate'], [])
    """
    return [node.id for node in spec.nodes if is_pipeline(node)]


def body_of(node: NodeSpec) -> GraphSpec:
    """The body of pipeline node ``node``: its inline block (named after the node unless it
    has a name), or the bundled topology or spec file its ``spec`` names; SpecError when it
    cannot be found or read.

    Example:
        >>> node = NodeSpec(id="chain", type="pipeline", params={"spec": {
        ...     "nodes": [{"id": "a", "type": "join"}],
        ...     "edges": [{"from": "START", "to": "a"}, {"from": "a", "to": "END"}]}})
        >>> body_of(node).name, body_of(node).node_ids()
        ('chain', ['a'])
    """
    return body_from(node.params.get("spec"), node.id)


def body_from(value: Any, name: str) -> GraphSpec:
    """The body a pipeline's ``spec`` parameter gives (an inline block is named ``name``
    unless it has a name); SpecError when there is none.

    Example:
        >>> body_from("majority_vote", "x").name
        'majority_vote'
    """
    if isinstance(value, GraphSpec):
        return value
    if isinstance(value, dict):
        return parse_spec({"name": name, **value}, f"body of node {name}")
    if isinstance(value, str):
        from tmas.graphs.bundled import resolve_spec

        return resolve_spec(value)
    raise SpecError(["a pipeline needs params.spec: a topology's name, a file or a block"], name)


def bodies(spec: GraphSpec) -> dict[str, GraphSpec]:
    """The body of each pipeline node of ``spec`` (one level), by node id; bodies that cannot
    be read are left out (validation names them).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> list(bodies(load_bundled("tmas"))), bodies(load_bundled("tmas_barrier"))
        (['candidate'], {})
    """
    found = {}
    for node in spec.nodes:
        if is_pipeline(node):
            try:
                found[node.id] = body_of(node)
            except SpecError:
                continue
    return found


def with_inline_bodies(spec: GraphSpec) -> GraphSpec:
    """``spec`` with every named body replaced by its inline block (nested ones too), so a
    saved run does not depend on files that may change.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> spec = load_bundled("tmas")
        >>> with_inline_bodies(spec) == spec
        True
    """
    nodes = []
    for node in spec.nodes:
        if is_pipeline(node) and not isinstance(node.params.get("spec"), dict):
            inner = with_inline_bodies(body_of(node))
            block = inner.model_dump(by_alias=True, exclude_defaults=True)
            node = node.model_copy(update={"params": {**node.params, "spec": block}})
        nodes.append(node)
    return spec.model_copy(update={"nodes": nodes})


def candidate_tasks(request: TaskRequest) -> list[dict[str, Any]]:
    """One chain input per plan: that plan alone, the run's problem, iteration and banks, the
    earlier rollouts the plan reads and the values of the run's state channels (but those the
    body writes itself); the body's own task builders then make one candidate's tasks from it.

    Example:
        >>> from tmas.config import TMASConfig
        >>> from tmas.nodes.control.iteration import plan_iteration
        >>> state = {"problem": "1+1?", "iteration": 1,
        ...          "plans": plan_iteration(TMASConfig(n_candidates=2), 1, [])}
        >>> tasks = candidate_tasks(TaskRequest(state))
        >>> [(t["plans"][0]["index"], t["previous"]) for t in tasks]
        [(0, []), (1, [])]
    """
    state = request.state
    base = {key: state[key] for key in CHAIN_INPUT_KEYS if key in state}  # type: ignore[literal-required]
    base.update({key: value for key, value in state.items() if key not in RUN_STATE_KEYS})
    tasks = []
    for plan in state.get("plans", []):
        named = {plan.get("parent_index"), *plan.get("references", [])}
        previous = [r for r in state.get("previous", []) if r["index"] in named]
        tasks.append({**base, "previous": previous, "plans": [plan]})
    return tasks
