"""The async methods LangGraph's ``astream``/``ainvoke`` call on a checkpointer, for savers
that only have synchronous ones (LangGraph's ``SqliteSaver`` and ``PostgresSaver``).

By default each runs the synchronous method in a worker thread, so the event loop keeps
serving model calls while a network database answers. A saver whose writes take a fraction of
a millisecond (SQLite in WAL mode, no disk sync per commit) sets ``writes_in_thread = False``:
its writes then happen on the loop at once, so a finished call's result is committed before
the next call can start, with no thread hand-off in between (a kill loses only the calls in
flight). The savers serialise their own database access with a lock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata, CheckpointTuple

T = TypeVar("T")


class AsyncFromSync:
    """Mixin (before the saver class in the bases) giving a synchronous checkpointer its
    async methods.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> class Saver(AsyncFromSync, InMemorySaver): ...
        >>> config = {"configurable": {"thread_id": "t"}}
        >>> asyncio.run(Saver().aget_tuple(config)) is None
        True
    """

    writes_in_thread: bool = True

    async def _run(self, method: Callable[..., T], *args: Any) -> T:
        if self.writes_in_thread:
            return await asyncio.to_thread(method, *args)
        return method(*args)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._run(self.get_tuple, config)  # type: ignore[attr-defined]

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        def read() -> list[CheckpointTuple]:
            found = self.list(config, filter=filter, before=before, limit=limit)  # type: ignore[attr-defined]
            return list(found)

        for item in await self._run(read):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: dict[str, Any],
    ) -> RunnableConfig:
        put = self.put  # type: ignore[attr-defined]
        return await self._run(put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self._run(self.put_writes, config, writes, task_id, task_path)  # type: ignore[attr-defined]

    async def adelete_thread(self, thread_id: str) -> None:
        await self._run(self.delete_thread, thread_id)  # type: ignore[attr-defined]


def with_async_methods(saver_class: type) -> type:
    """``saver_class`` with :class:`AsyncFromSync` (same name, for messages).

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> with_async_methods(InMemorySaver).__name__
        'InMemorySaver'
    """
    return type(saver_class.__name__, (AsyncFromSync, saver_class), {})
