"""The graph factories that ``langgraph.json`` exposes to LangGraph's server and Studio: one
per bundled topology, each compiled from its spec file (``make_graph`` is TMAS).

The backend comes from the environment: ``TMAS_BASE_URL`` and ``TMAS_MODEL`` select an
OpenAI-compatible endpoint (e.g. ``vllm serve``); otherwise the embedded llama.cpp model runs.
Neither exposes a model's internals, so the topologies that pass latents (``latent_mas``) are
not served. The server supplies its own checkpointer and store.

Example:
    >>> callable(make_pacore) and callable(make_delm)
    True
"""

from __future__ import annotations

from collections.abc import Callable

from langgraph.graph.state import CompiledStateGraph

from tmas.graphs.bundled import bundled_names, load_bundled
from tmas.graphs.compiler import compile_plan
from tmas.graphs.run_plan import plan_router, plan_run
from tmas.graphs.traits import spec_needs_internals
from tmas.llm.backend import backend_from_env
from tmas.nodes.prompts import builtin_templates

# Read at import, when the server loads this module: a factory called for each run in the
# server's event loop then reads no file (the server refuses blocking calls there).
SPECS = {
    name: spec
    for name, spec in ((name, load_bundled(name)) for name in bundled_names())
    if not spec_needs_internals(spec)
}
builtin_templates()


def served_graph(name: str) -> CompiledStateGraph:
    """Bundled topology ``name`` with its own settings and the environment's backend."""
    plan = plan_run(SPECS[name], None, backend_from_env())
    return compile_plan(plan, plan_router(plan))


def _factory(name: str) -> Callable[[], CompiledStateGraph]:
    def make() -> CompiledStateGraph:
        return served_graph(name)

    make.__name__ = f"make_{name}"
    make.__doc__ = f"The bundled {name!r} topology for the LangGraph server."
    return make


FACTORIES = {f"make_{name}": _factory(name) for name in SPECS}
globals().update(FACTORIES)
make_graph = FACTORIES["make_tmas"]


def langgraph_graphs() -> dict[str, str]:
    """The ``graphs`` entry of ``langgraph.json``: each bundled topology's factory.

    Example:
        >>> langgraph_graphs()["pacore"]
        './tmas/graphs/served.py:make_pacore'
    """
    return {name: f"./tmas/graphs/served.py:make_{name}" for name in SPECS}
