"""TMAS: scaling test-time compute via multi-agent synergy, as a LangGraph state machine.

Example:
    >>> from tmas import TMASConfig, build_tmas_graph
    >>> from tmas.testing.fake_chat import ScriptedChatModel
    >>> graph = build_tmas_graph(TMASConfig(n_candidates=2, n_verifications=1,
    ...                                     max_iterations=1), llm=ScriptedChatModel())
    >>> graph.invoke({"problem": "What is 9 + 9?"})["stop_reason"]
    'max_iterations'
"""

from tmas.config import TMASConfig
from tmas.graphs import build_tmas_graph

__all__ = ["TMASConfig", "build_tmas_graph"]
