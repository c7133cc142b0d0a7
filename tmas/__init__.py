"""TMAS: scaling test-time compute via multi-agent synergy, as a LangGraph state machine.

The public Python API: load a topology (bundled name or spec file), build its graph with any
LangChain chat model, and solve, resume, fork or evaluate saved runs.

Example:
    >>> import tmas
    >>> from tmas.testing.fake_chat import ScriptedChatModel
    >>> spec = tmas.load_topology("tmas").without_nodes("extract_guideline")
    >>> graph = tmas.build_graph(spec, llm=ScriptedChatModel(),
    ...                          config={"n_candidates": 2, "max_iterations": 1})
    >>> state = graph.invoke({"problem": "What is 9 + 9?"})
    >>> state["stop_reason"], "guideline" in state["usage"]
    ('max_iterations', False)
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tmas.api import CustomModelError, build_graph, build_tmas_graph, load_topology
    from tmas.config import RoleModel, TMASConfig
    from tmas.graphs.bundled import bundled_names
    from tmas.graphs.run_plan import RunPlan, plan_run
    from tmas.graphs.settings import topology_config
    from tmas.graphs.spec import GraphSpec, SpecError
    from tmas.lifecycle.run_status import RunOutcome
    from tmas.llm.backend import BackendSpec
    from tmas.saved_runs import evaluate, fork, resume, solve

_HOMES = {
    "BackendSpec": "tmas.llm.backend",
    "CustomModelError": "tmas.api",
    "GraphSpec": "tmas.graphs.spec",
    "RoleModel": "tmas.config",
    "RunOutcome": "tmas.lifecycle.manager",
    "RunPlan": "tmas.graphs.run_plan",
    "SpecError": "tmas.graphs.spec",
    "TMASConfig": "tmas.config",
    "build_graph": "tmas.api",
    "build_tmas_graph": "tmas.api",
    "bundled_names": "tmas.graphs.bundled",
    "evaluate": "tmas.saved_runs",
    "fork": "tmas.saved_runs",
    "load_topology": "tmas.api",
    "plan_run": "tmas.graphs.run_plan",
    "resume": "tmas.saved_runs",
    "solve": "tmas.saved_runs",
    "topology_config": "tmas.graphs.settings",
}


def __getattr__(name: str) -> Any:
    """The public API, imported on first use (``import tmas`` stays cheap: the command line
    loads LangGraph, LangChain and the backends only for the commands that need them)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tmas' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "BackendSpec",
    "CustomModelError",
    "GraphSpec",
    "RoleModel",
    "RunOutcome",
    "RunPlan",
    "SpecError",
    "TMASConfig",
    "build_graph",
    "build_tmas_graph",
    "bundled_names",
    "evaluate",
    "fork",
    "load_topology",
    "plan_run",
    "resume",
    "solve",
    "topology_config",
]
