"""What a topology's nodes are, read from their registered types: which write candidates,
end an iteration, share a store or need the model's internals."""

from __future__ import annotations

from tmas.graphs.pipeline import bodies
from tmas.graphs.spec import GraphSpec
from tmas.graphs.validate import plain_sources
from tmas.registration import registry


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
        if inner.get(node.id) or getattr(registry().nodes.get(node.type), trait, False)
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
