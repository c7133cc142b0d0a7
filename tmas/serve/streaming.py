"""A launched request as ``chat.completion.chunk`` dicts: each run's progress (the agents'
live events, one line each) as ``reasoning_content``, its chosen solution as ``content``,
then one last chunk with the usage of every call."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from tmas.nodes.events import describe_event
from tmas.serve.api_errors import APIError
from tmas.serve.completions import (
    chosen_solution,
    chunk,
    delta,
    extension,
    openai_usage,
    runs_usage,
)


async def stream_chunks(
    launch: Any,
    result_of: Callable[[Any, int], dict[str, Any]],
    cancel_on_close: bool,
) -> AsyncIterator[dict[str, Any]]:
    """The chunks of ``launch`` (a :class:`~tmas.serve.service.Launch`) as its runs go;
    ``result_of(launch, index)`` gives a finished run's state or raises its APIError, which
    ends the stream with that error's body. Closed before the end, the runs are cancelled
    when ``cancel_on_close``."""
    model, ids = launch.request.model, launch.run_ids
    states: dict[int, dict[str, Any]] = {}
    ended = False
    try:
        yield chunk(model, ids, [delta(i, role="assistant", content="") for i in range(len(ids))])
        while len(states) < len(ids):
            index, kind, item = await launch.events.get()
            if kind == "event":
                line = describe_event(item) + "\n"
                yield chunk(model, ids, [delta(index, reasoning_content=line)])
                continue
            try:
                states[index] = result_of(launch, index)
            except APIError as exc:
                launch.cancel()  # the request failed: its other runs stop too
                ended = True
                yield exc.body()
                return
            yield chunk(model, ids, [delta(index, content=chosen_solution(states[index]))])
            yield chunk(model, ids, [delta(index, finish_reason="stop")])
        ordered = [states[i] for i in range(len(ids))]
        by_role = runs_usage(ordered)
        ended = True
        yield chunk(
            model, ids, [], usage=openai_usage(by_role), tmas=extension(ids, ordered, by_role)
        )
    finally:
        if not ended and cancel_on_close:
            launch.cancel()
