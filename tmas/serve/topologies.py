"""Which topologies a server offers as models."""

from __future__ import annotations

from collections.abc import Sequence

from tmas.api import load_topology
from tmas.graphs.bundled import bundled_names
from tmas.graphs.compiler import spec_needs_internals
from tmas.graphs.spec import GraphSpec


def offered_topologies(
    graphs: Sequence[str] = (), plugins: Sequence[str] = (), kind: str = "openai"
) -> dict[str, GraphSpec]:
    """The topologies a server offers: ``graphs`` (bundled names or spec files, named by their
    spec's name), or every bundled one the backend can run; ValueError for a clash or a bad one.

    Example:
        >>> sorted(offered_topologies(["tmas", "majority_vote"], [], "openai"))
        ['majority_vote', 'tmas']
        >>> "latent_mas" in offered_topologies([], [], "openai")
        False
    """
    offered: dict[str, GraphSpec] = {}
    for ref in graphs or bundled_names():
        spec = load_topology(ref, plugins=list(plugins))
        if spec_needs_internals(spec) and kind != "hf":
            if graphs:
                raise ValueError(f"topology {spec.name!r} reads model internals: use --backend hf")
            continue
        if spec.name in offered:
            raise ValueError(f"two topologies are named {spec.name!r}: rename one spec")
        offered[spec.name] = spec
    return offered
