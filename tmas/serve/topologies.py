"""Which topologies a server offers as models."""

from __future__ import annotations

from collections.abc import Sequence

from tmas.api import load_topology
from tmas.graphs.bundled import bundled_names
from tmas.graphs.spec import GraphSpec
from tmas.graphs.traits import spec_needs_internals


def offered_topologies(
    graphs: Sequence[str] = (),
    plugins: Sequence[str] = (),
    kind: str = "openai",
    *,
    bundled: bool = True,
) -> dict[str, GraphSpec]:
    """The topologies a server offers, by name: every bundled one the backend can run (unless
    ``bundled`` is off), plus ``graphs`` (bundled names or spec files, each named by its spec);
    ValueError for two specs of one name or one the backend cannot run.

    Example:
        >>> sorted(offered_topologies(["tmas", "majority_vote"], bundled=False))
        ['majority_vote', 'tmas']
        >>> offered = offered_topologies()
        >>> "pacore" in offered, "latent_mas" in offered
        (True, False)
    """
    offered: dict[str, GraphSpec] = {}
    if bundled:
        for name in bundled_names():
            spec = load_topology(name, plugins=list(plugins))
            if kind == "hf" or not spec_needs_internals(spec):
                offered[name] = spec
    for ref in graphs:
        spec = load_topology(ref, plugins=list(plugins))
        if spec_needs_internals(spec) and kind != "hf":
            raise ValueError(f"topology {spec.name!r} reads model internals: use --backend hf")
        if spec.name in offered and spec != offered[spec.name]:
            raise ValueError(
                f"two topologies are named {spec.name!r} ({ref} and "
                f"{'a bundled one' if bundled else 'another --graph'}): rename one, or offer "
                "only the given ones with --no-bundled"
            )
        offered[spec.name] = spec
    return offered
