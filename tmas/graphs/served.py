"""The graph factory that ``langgraph.json`` exposes to LangGraph's server and Studio.

The backend comes from the environment: ``TMAS_BASE_URL`` and ``TMAS_MODEL`` select an
OpenAI-compatible endpoint (e.g. ``vllm serve``); otherwise the embedded llama.cpp model runs.
The server supplies its own checkpointer.
"""

from __future__ import annotations

import os

from langgraph.graph.state import CompiledStateGraph

from tmas.config import TMASConfig
from tmas.graphs.tmas import build_tmas_graph
from tmas.llm.backend import BackendSpec, make_router


def backend_from_env() -> BackendSpec:
    """The backend named by ``TMAS_BASE_URL``/``TMAS_MODEL`` (embedded llama.cpp when unset).

    Example:
        >>> backend_from_env().kind in ("llamacpp", "openai")
        True
    """
    base_url = os.environ.get("TMAS_BASE_URL")
    model = os.environ.get("TMAS_MODEL")
    if base_url:
        return BackendSpec(kind="openai", base_url=base_url, model=model)
    return BackendSpec(kind="llamacpp", model=model)


def make_graph() -> CompiledStateGraph:
    """Build the TMAS graph with the default config and the environment's backend."""
    config = TMASConfig()
    return build_tmas_graph(config, llm=make_router(backend_from_env(), config))
