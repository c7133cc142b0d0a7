"""Running a coroutine to its end from synchronous code: on a new event loop in this thread,
or, where this thread already runs a loop (a Jupyter kernel), on a new loop in a helper
thread. The loop's default thread pool is sized for the nodes that run in threads."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from tmas.llm.loop_clients import close_loop_clients

T = TypeVar("T")
LOOP_THREADS = 64


async def _on_fresh_loop(make: Callable[[], Awaitable[T]]) -> T:
    loop = asyncio.get_running_loop()
    executor = ThreadPoolExecutor(max_workers=LOOP_THREADS, thread_name_prefix="tmas-node")
    loop.set_default_executor(executor)
    try:
        return await make()
    finally:
        await close_loop_clients()


def run_to_end(make: Callable[[], Awaitable[T]]) -> T:
    """Await ``make()`` on a new event loop and return its result (its exceptions raised,
    Ctrl-C as ``KeyboardInterrupt``); the HTTP clients the loop opened are closed after.

    Example:
        >>> async def answer():
        ...     return 42
        >>> run_to_end(answer)
        42
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_on_fresh_loop(make))
    with ThreadPoolExecutor(max_workers=1) as helper:
        return helper.submit(asyncio.run, _on_fresh_loop(make)).result()
