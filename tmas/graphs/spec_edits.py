"""Editing a topology spec from Python: taking nodes out (an ablation) and putting one in,
right after or right before a named node, in the topology or inside a pipeline's inline body.
Each returns a new spec; validate it (``tmas.load_topology``) before running it.

The spec's own methods (``GraphSpec.without_nodes``, ``GraphSpec.with_node``) call these; so
that the format's module need not be imported here, a spec's node and edge models are read
off its fields."""

from __future__ import annotations

from typing import Any, get_args

END = "END"  # the exit of a loop edge that leaves the topology (tmas.graphs.spec.END)

Spec = Any  # a GraphSpec (tmas.graphs.spec)


def _model_of(spec: Spec, field: str) -> Any:
    """The model of the items of list field ``field`` of ``spec`` (its nodes', its edges').

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> _model_of(load_bundled("tmas"), "edges").__name__
        'EdgeSpec'
    """
    return get_args(type(spec).model_fields[field].annotation)[0]


def _inline_body(node: Any) -> bool:
    """Whether ``node`` is a pipeline with an inline body block (see :mod:`tmas.graphs.pipeline`).

    Example:
        >>> from types import SimpleNamespace
        >>> _inline_body(SimpleNamespace(type="pipeline", params={"spec": {}}))
        True
    """
    return node.type == "pipeline" and isinstance(node.params.get("spec"), dict)


def _bodies(spec: Spec) -> dict[str, Spec]:
    """The inline pipeline bodies of ``spec``, by their node's id."""
    return {
        n.id: type(spec).model_validate({"name": n.id, **n.params["spec"]})
        for n in spec.nodes
        if _inline_body(n)
    }


def _with_body(spec: Spec, node_id: str, body: Spec) -> Spec:
    """``spec`` with pipeline ``node_id``'s inline body replaced by ``body``'s nodes and edges."""
    nodes = []
    for node in spec.nodes:
        if node.id == node_id:
            block = body.model_dump(by_alias=True, include={"nodes", "edges"},
                                    exclude_defaults=True)  # fmt: skip
            params = {**node.params, "spec": {**node.params["spec"], **block}}
            node = node.model_copy(update={"params": params})
        nodes.append(node)
    return spec.model_copy(update={"nodes": nodes})


def _known(spec: Spec, bodies: dict[str, Spec]) -> list[str]:
    return spec.node_ids() + [i for body in bodies.values() for i in body.node_ids()]


def without_nodes(spec: Spec, *node_ids: str) -> Spec:
    """``spec`` without the given nodes (an ablation): each is taken out of the edges that lead
    to it; an edge left without targets, or a loop exit, leads instead (as a plain edge) to
    where the node's own single plain edge led. A node of a pipeline's inline body is taken
    out of that body. KeyError for an unknown id.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> nested = without_nodes(load_bundled("tmas"), "extract_guideline")
        >>> [n["id"] for n in nested.nodes[1].params["spec"]["nodes"]][-2:]
        ['summarize', 'extract_experience']
    """
    bodies = _bodies(spec)
    known = _known(spec, bodies)
    unknown = [i for i in node_ids if i not in known]
    if unknown:
        raise KeyError(f"no node {unknown[0]!r}; nodes: {', '.join(known)}")
    gone = set(node_ids)
    for node_id, body in bodies.items():
        if gone & set(body.node_ids()):
            spec = _with_body(spec, node_id, without_nodes(body, *(gone & set(body.node_ids()))))
    return _without_here(spec, gone)


def _without_here(spec: Spec, gone: set[str]) -> Spec:
    """``spec`` without its own ``gone`` nodes (see :func:`without_nodes`)."""

    def onward(node_id: str, seen: frozenset[str] = frozenset()) -> list[str]:
        outs = [e for e in spec.edges if e.source == node_id]
        if len(outs) != 1 or outs[0].fanout or outs[0].until or node_id in seen:
            return []
        found: list[str] = []
        for target in outs[0].targets:
            found += onward(target, seen | {node_id}) if target in gone else [target]
        return found

    edges = []
    for edge in spec.edges:
        if edge.source in gone:
            continue
        kept = [t for t in edge.targets if t not in gone]
        update: dict[str, Any] = {}
        if not kept:  # bypass the removed nodes; a fan-out into them has nothing to send
            kept = [t for removed in edge.targets for t in onward(removed)]
            update["fanout"] = None
        if not kept:
            continue
        update["target"] = kept[0] if len(kept) == 1 and isinstance(edge.target, str) else kept
        if edge.until and edge.exit in gone:
            update["exit"] = (onward(edge.exit) or [END])[0]
        edges.append(edge.model_copy(update=update))
    nodes = [n for n in spec.nodes if n.id not in gone]
    return spec.model_copy(update={"nodes": nodes, "edges": edges})


def with_node(
    spec: Spec,
    node: Any,
    *,
    after: str | None = None,
    before: str | None = None,
) -> Spec:
    """``spec`` with ``node`` put in right ``after`` a named node (it takes over that node's
    outgoing edges, fan-outs and loops included, and the named node leads to it) or right
    ``before`` one (the edges into the named node lead to it instead, and it leads on to the
    named node). A named node inside a pipeline's inline body is found there and ``node``
    goes into that body. KeyError for an unknown name, ValueError for a taken id, for both or
    neither of ``after`` and ``before``, and for ``before`` a node fed by a fan-out (its tasks
    are for it: put the new node after it, or before the node that fans out).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> spec = with_node(load_bundled("tmas"), {"id": "check", "type": "join"},
        ...                  after="summarize")
        >>> body = spec.nodes[1].params["spec"]
        >>> [(e["from"], e["to"]) for e in body["edges"] if "check" in (e["from"], e["to"])]
        [('check', ['extract_experience', 'extract_guideline']), ('summarize', 'check')]
    """
    node_model = _model_of(spec, "nodes")
    new = node if isinstance(node, node_model) else node_model.model_validate(node)
    if (after is None) == (before is None):
        raise ValueError("give one of after= and before=: the node the new one goes next to")
    anchor = after if after is not None else before
    assert anchor is not None
    bodies = _bodies(spec)
    known = _known(spec, bodies)
    if new.id in known:
        raise ValueError(f"node id {new.id!r} is taken; nodes: {', '.join(known)}")
    if anchor not in known:
        raise KeyError(f"no node {anchor!r}; nodes: {', '.join(known)}")
    for node_id, body in bodies.items():
        if anchor in body.node_ids():
            inner = with_node(body, new, after=after, before=before)
            return _with_body(spec, node_id, inner)
    edges = _after(spec, new.id, anchor) if after is not None else _before(spec, new.id, anchor)
    return spec.model_copy(update={"nodes": [*spec.nodes, new], "edges": edges})


def _after(spec: Spec, new: str, anchor: str) -> list[Any]:
    """The edges of ``spec`` with ``new`` taking over ``anchor``'s outgoing edges."""
    edges = [e.model_copy(update={"source": new}) if e.source == anchor else e for e in spec.edges]
    return [*edges, _model_of(spec, "edges").model_validate({"from": anchor, "to": new})]


def _before(spec: Spec, new: str, anchor: str) -> list[Any]:
    """The edges of ``spec`` with those into ``anchor`` leading to ``new`` instead."""
    edges = []
    for edge in spec.edges:
        update: dict[str, Any] = {}
        if anchor in edge.targets:
            if edge.fanout is not None:
                raise ValueError(
                    f"node {anchor!r} is fed by a fan-out from {edge.source!r}: its tasks are for "
                    f"it; put the new node after {anchor!r}, or before {edge.source!r}"
                )
            targets = [new if t == anchor else t for t in edge.targets]
            update["target"] = targets[0] if isinstance(edge.target, str) else targets
        if edge.until is not None and edge.exit == anchor:
            update["exit"] = new
        edges.append(edge.model_copy(update=update) if update else edge)
    return [*edges, _model_of(spec, "edges").model_validate({"from": new, "to": anchor})]
