"""Driving one pass of a run's graph on an event loop, and telling how a run ended."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from tmas.lifecycle.event_loop import run_to_end
from tmas.lifecycle.progress import ProgressDisplay

EventSink = Callable[[dict[str, Any]], None]
STOP_POLL_S = 0.1  # how often a run driven with a stop event looks at it


class RunCancelled(RuntimeError):
    """The run's stop event was set: it stopped where it was, saved up to its last step."""


def stream_pass(
    graph: CompiledStateGraph,
    payload: Any,
    start: dict[str, Any],
    options: dict[str, Any],
    display: ProgressDisplay,
    on_event: EventSink | None,
    stop: threading.Event | None = None,
) -> None:
    """One pass of a run's graph, to its end or its next pause, driven with ``astream`` on
    one event loop (the agents' model calls are async ones); live events go to ``on_event``
    and everything else to the progress display. Once ``stop`` is set the pass is cancelled
    (its calls in flight too) and :class:`RunCancelled` raised."""

    async def one_pass() -> None:
        async for namespace, mode, chunk in graph.astream(payload, start, **options):
            if mode == "custom":
                on_event(chunk)  # type: ignore[misc]
            else:
                display.observe(mode, chunk, namespace)

    async def until_stopped() -> None:
        task = asyncio.ensure_future(one_pass())
        while not task.done():
            await asyncio.wait({task}, timeout=STOP_POLL_S)
            if stop is not None and stop.is_set() and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise RunCancelled("the run was cancelled")
        task.result()

    run_to_end(one_pass if stop is None else until_stopped)
