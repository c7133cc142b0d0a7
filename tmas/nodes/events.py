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

from tmas.terminal import plain

TEXT_LIMIT = 160


def emit(event: str, **fields: Any) -> None:
    """Send ``{"event": event, **fields}`` to the running graph's custom stream, if any.

    Example:
        >>> emit("candidate", index=0, answer="18")  # outside a graph: nothing happens
    """
    from langgraph.config import get_stream_writer  # loaded by then in a run; not before

    try:
        writer = get_stream_writer()
    except RuntimeError:  # not inside a running graph
        return
    writer({"event": event, **fields})


def describe_event(event: dict[str, Any]) -> str:
    """One line for a live event (model text made safe for the terminal).

    Example:
        >>> describe_event({"event": "candidate", "iteration": 1, "index": 0,
        ...                 "mode": "explore", "answer": "18", "output_tokens": 40})
        'it 1  candidate 0 (explore): answer 18, 40 tokens'
    """
    kind, it = event.get("event"), event.get("iteration")
    if kind == "candidate":
        return (
            f"it {it}  candidate {event['index']} ({event['mode']}): answer "
            f"{plain(event['answer'], 40)}, {event.get('output_tokens', '?')} tokens"
        )
    if kind == "verdict":
        score = event.get("score")
        shown = "-" if score is None else f"{score:.2f}"
        return (
            f"it {it}  check {event['check_index']} of candidate {event['candidate_index']}: "
            f"{event['verdict']} (score {shown})"
        )
    if kind in ("experience_added", "guideline_added"):
        what = "experience" if kind == "experience_added" else "guideline"
        return (
            f"it {it}  + {what} from candidate {event['source_index']}: "
            f"{plain(event['text'], TEXT_LIMIT)}"
        )
    if kind == "iteration":
        return (
            f"it {it}  vote: {plain(event.get('voted_answer'), 40)}; answer so far "
            f"{plain(event.get('final_answer'), 40)}"
        )
    return plain(event, TEXT_LIMIT)
