"""Live events: agents report what they just produced on LangGraph's ``custom`` stream.

Any caller of ``graph.stream(..., stream_mode="custom", subgraphs=True)`` (or a list of modes
including it) receives them as dicts with an ``event`` key; ``tmas solve --stream`` prints
them. ``subgraphs=True`` passes on the events of nodes inside pipeline bodies (each
candidate's chain in ``tmas``); without it only the topology's own nodes' events arrive.
Outside a streaming graph (a node called directly, or a stream without the custom mode)
emitting does nothing.

Events: ``candidate`` (a solver finished), ``verdict`` (one check of one candidate),
``experience_added`` / ``guideline_added`` (a bank kept a new item), ``iteration`` (the vote
of a finished iteration).
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer


def emit(event: str, **fields: Any) -> None:
    """Send ``{"event": event, **fields}`` to the running graph's custom stream, if any.

    Example:
        >>> emit("candidate", index=0, answer="18")  # outside a graph: nothing happens
    """
    try:
        writer = get_stream_writer()
    except RuntimeError:  # not inside a running graph
        return
    writer({"event": event, **fields})
