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

from tmas.api import CustomModelError, build_graph, build_tmas_graph, load_topology
from tmas.config import RoleModel, TMASConfig
from tmas.graphs.bundled import bundled_names
from tmas.graphs.settings import topology_config
from tmas.graphs.spec import GraphSpec, SpecError
from tmas.lifecycle.manager import RunOutcome
from tmas.llm.backend import BackendSpec
from tmas.saved_runs import evaluate, fork, resume, solve

__all__ = [
    "BackendSpec",
    "CustomModelError",
    "GraphSpec",
    "RoleModel",
    "RunOutcome",
    "SpecError",
    "TMASConfig",
    "build_graph",
    "build_tmas_graph",
    "bundled_names",
    "evaluate",
    "fork",
    "load_topology",
    "resume",
    "solve",
    "topology_config",
]
