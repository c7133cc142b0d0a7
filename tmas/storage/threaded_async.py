"""The async methods LangGraph's ``astream``/``ainvoke`` call on a checkpointer, for savers
that only have synchronous ones (LangGraph's ``SqliteSaver`` and ``PostgresSaver``): each runs
the synchronous method in a worker thread, so the event loop keeps serving model calls while a
checkpoint is written. The savers serialise their own database access with a lock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata, CheckpointTuple


class ThreadedAsyncMethods:
    """Mixin (before the saver class in the bases) giving a synchronous checkpointer its
    async methods.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> class Saver(ThreadedAsyncMethods, InMemorySaver): ...
        >>> config = {"configurable": {"thread_id": "t"}}
        >>> asyncio.run(Saver().aget_tuple(config)) is None
        True
    """

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)  # type: ignore[attr-defined]

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

        for item in await asyncio.to_thread(read):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: dict[str, Any],
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)  # type: ignore[attr-defined]

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)  # type: ignore[attr-defined]

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)  # type: ignore[attr-defined]


def with_async_methods(saver_class: type) -> type:
    """``saver_class`` with :class:`ThreadedAsyncMethods` (same name, for messages).

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> with_async_methods(InMemorySaver).__name__
        'InMemorySaver'
    """
    return type(saver_class.__name__, (ThreadedAsyncMethods, saver_class), {})
