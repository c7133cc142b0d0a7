"""Topology builders: they wire nodes into LangGraph graphs and know no role's internals."""

from tmas.graphs.tmas import build_tmas_graph

__all__ = ["build_tmas_graph"]
