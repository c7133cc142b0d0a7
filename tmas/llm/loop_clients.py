"""What an event loop needs to call chat models asynchronously: one HTTP client per endpoint,
a bound on calls in flight, and a thread pool for models that only answer synchronously.

An ``httpx.AsyncClient`` (and so an ``openai.AsyncOpenAI``) belongs to the event loop that
first used it: its pooled connections cannot be shared with another loop. Runs driven in
several threads (an evaluation's problems) each have their own loop, so every loop gets its
own copy of each OpenAI-compatible model, with its own connection pool, shared by all of that
loop's calls to that endpoint; :meth:`LoopClients.aclose` closes them when the loop's run ends.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.language_models import BaseChatModel

from tmas.llm.endpoint import DEFAULT_POOL, EndpointChatModel

THREADS_WITHOUT_BOUND = 32
ENDING_GRACE_S = 30.0
SAVE_TURNS = 4  # loop turns from a reply to its task's writes being committed, with margin


def answers_async(model: BaseChatModel) -> bool:
    """Whether ``model`` has an asynchronous implementation of its own (else langchain-core
    would run its synchronous one in the loop's default thread pool). A runnable that is not
    a chat model (a model with bound arguments, say) is awaited as it is.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> answers_async(ScriptedChatModel())
        False
    """
    if not isinstance(model, BaseChatModel):
        return True
    return type(model)._agenerate is not BaseChatModel._agenerate


def with_own_http_client(model: BaseChatModel, pool_size: int) -> BaseChatModel:
    """A copy of an OpenAI-compatible ``model`` whose async calls go through a new connection
    pool of ``pool_size`` connections (any other model is returned as is).

    Example:
        >>> from tmas.llm.openai_compat import make_openai_chat_model
        >>> chat = make_openai_chat_model(base_url="http://127.0.0.1:9/v1", model="m",
        ...                               max_tokens=8, temperature=0.0)
        >>> own = with_own_http_client(chat, 256)
        >>> own.root_async_client is chat.root_async_client, own.model_name
        (False, 'm')
    """
    if isinstance(model, EndpointChatModel):  # the package's own client
        return model.with_pool(max(pool_size, DEFAULT_POOL))
    root = getattr(model, "root_async_client", None)
    if root is None or not hasattr(root, "copy"):
        return model
    import httpx
    import openai

    size = max(pool_size, DEFAULT_POOL)
    http = openai.DefaultAsyncHttpxClient(
        limits=httpx.Limits(max_connections=size, max_keepalive_connections=size)
    )
    client = root.copy(http_client=http)
    update = {"root_async_client": client, "async_client": client.chat.completions}
    return model.model_copy(update=update)


def _run_key() -> str | None:
    """The graph run the current call belongs to (its thread id; None outside a graph)."""
    from langgraph.config import get_config

    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a running graph
        return None
    return str(configurable.get("thread_id"))


class LoopClients:
    """Per event loop: each model's loop-bound copy, the semaphore bounding calls in flight
    (``max_parallel_calls``, shared by every role's calls) and, for models without an async
    implementation, a thread pool as wide as that bound.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> async def twice(clients, model):
        ...     return clients.model(model) is clients.model(model), clients.slots()._value
        >>> asyncio.run(twice(LoopClients(4), ScriptedChatModel()))
        (True, 4)
    """

    def __init__(self, max_parallel_calls: int | None) -> None:
        _ALL.add(self)
        self.max_parallel_calls = max_parallel_calls
        self.ending_grace_s = ENDING_GRACE_S
        self._lock = threading.Lock()
        self._per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Any]] = (
            weakref.WeakKeyDictionary()
        )
        self._executor: ThreadPoolExecutor | None = None

    def _mine(self) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        with self._lock:
            found = self._per_loop.get(loop)
            if found is None:
                found = {"models": {}, "slots": None, "ending": set()}
                if self.max_parallel_calls:
                    found["slots"] = asyncio.Semaphore(self.max_parallel_calls)
                self._per_loop[loop] = found
            return found

    def model(self, model: BaseChatModel) -> BaseChatModel:
        """``model``'s copy for the running loop (made on first use)."""
        models = self._mine()["models"]
        if id(model) not in models:
            pool = self.max_parallel_calls or DEFAULT_POOL
            models[id(model)] = (model, with_own_http_client(model, pool))
        return models[id(model)][1]

    def slots(self) -> asyncio.Semaphore | None:
        """The running loop's bound on calls in flight (None: unbounded)."""
        return self._mine()["slots"]

    def end_calls(self) -> None:
        """The running graph run is ending (one of its calls failed in a way that stops it):
        its calls not sent yet are not (:meth:`hold_if_ending` holds them back). Other runs on the
        same loop go on."""
        self._mine()["ending"].add(_run_key())

    async def hold_if_ending(self) -> None:
        """Once the running graph run is ending, wait instead of sending a call: LangGraph
        cancels the waiting task as the run stops (raising from here instead would replace
        the error that stops the run). After ``ending_grace_s`` without that, the call is
        cancelled here.

        Example:
            >>> async def after_end(clients):
            ...     clients.end_calls()
            ...     await clients.hold_if_ending()
            >>> clients = LoopClients(1)
            >>> clients.ending_grace_s = 0.01
            >>> asyncio.run(after_end(clients))
            Traceback (most recent call last):
            ...
            asyncio.exceptions.CancelledError: the run is ending: call not sent
        """
        if _run_key() in self._mine()["ending"]:
            await asyncio.sleep(self.ending_grace_s)
            raise asyncio.CancelledError("the run is ending: call not sent")

    async def let_finished_calls_save(self) -> None:
        """Yield the loop a few turns before a call is sent: the slot it took was freed by a
        call whose reply just came, and that reply's task hands its result to the
        checkpointer a turn or two later (LangGraph commits a task's writes from its done
        callback). Sending only after that keeps what a kill can lose to the calls really in
        flight.

        Example:
            >>> asyncio.run(LoopClients(1).let_finished_calls_save())
        """
        for _ in range(SAVE_TURNS):
            await asyncio.sleep(0)

    def executor(self) -> ThreadPoolExecutor:
        """The threads that run synchronous-only models' calls (one pool for all loops)."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=self.max_parallel_calls or THREADS_WITHOUT_BOUND,
                    thread_name_prefix="tmas-model",
                )
            return self._executor

    async def aclose(self) -> None:
        """Close the running loop's HTTP clients and forget its copies.

        Example:
            >>> asyncio.run(LoopClients(2).aclose())
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            found = self._per_loop.pop(loop, None)
        for original, own in (found or {"models": {}})["models"].values():
            if own is original:
                continue
            if isinstance(own, EndpointChatModel):
                await own.aclose()
            else:
                await own.root_async_client.close()


_ALL: weakref.WeakSet[LoopClients] = weakref.WeakSet()


async def close_loop_clients() -> None:
    """Close every HTTP client the running event loop opened through any router (the end of a
    run driven on that loop).

    Example:
        >>> asyncio.run(close_loop_clients())
    """
    for clients in list(_ALL):
        await clients.aclose()
