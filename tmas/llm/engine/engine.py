"""One engine per loaded model: chats in, text events out, from threads or coroutines."""

from __future__ import annotations

import asyncio
import atexit
import queue
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

from tmas.llm.engine.loaded_model import EngineSettings, LoadedModel
from tmas.llm.engine.request import GenerationRequest, Outcome, Sampling
from tmas.llm.engine.scheduler import BatchScheduler

Event = tuple[str, Any]


class LlamaEngine:
    """A loaded model and the scheduler that batches every concurrent call to it.

    ``stream`` yields ``("text", str)`` events, then one ``("done", Outcome)``; an error of
    the request is raised. Leaving the iteration early cancels the request.

    Example:
        >>> from tmas.llm.model_files import smollm2_path
        >>> engine = LlamaEngine(EngineSettings(str(smollm2_path()), n_ctx=512, max_sequences=2))
        >>> chat = [{"role": "user", "content": "Say hi"}]
        >>> engine.complete(chat, max_tokens=4, sampling=Sampling(0.0)).output_tokens
        4
        >>> engine.close()
    """

    def __init__(self, settings: EngineSettings) -> None:
        self.settings = settings
        self.model = LoadedModel(settings)
        self.scheduler = BatchScheduler(self.model)

    def _request(
        self,
        prompt: list[int],
        max_tokens: int,
        sampling: Sampling,
        stops: list[str] | None,
        listener: Any,
    ) -> GenerationRequest:
        return GenerationRequest(prompt, max_tokens, sampling, listener, list(stops or []))

    def stream(
        self,
        chat: list[dict[str, str]],
        *,
        max_tokens: int,
        sampling: Sampling,
        stops: list[str] | None = None,
    ) -> Iterator[Event]:
        """The request's events, from the calling thread."""
        events: queue.SimpleQueue[Event] = queue.SimpleQueue()
        prompt = self.model.prompt_tokens(chat)
        request = self._request(prompt, max_tokens, sampling, stops, events.put)
        try:
            self.scheduler.submit(request)
            while True:
                kind, value = events.get()
                if kind == "error":
                    raise value
                yield kind, value
                if kind == "done":
                    return
        finally:
            request.cancel()  # frees its sequence if it still runs; a no-op once it ended

    def complete(
        self,
        chat: list[dict[str, str]],
        *,
        max_tokens: int,
        sampling: Sampling,
        stops: list[str] | None = None,
    ) -> Outcome:
        """The finished request's outcome."""
        for kind, value in self.stream(chat, max_tokens=max_tokens, sampling=sampling, stops=stops):
            if kind == "done":
                return value
        raise RuntimeError("the engine ended a request without an outcome")

    async def astream(
        self,
        chat: list[dict[str, str]],
        *,
        max_tokens: int,
        sampling: Sampling,
        stops: list[str] | None = None,
    ) -> AsyncIterator[Event]:
        """The request's events, in the calling event loop (no thread waits for them)."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Event] = asyncio.Queue()

        def listener(event: Event) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(events.put_nowait, event)

        prompt = await loop.run_in_executor(None, self.model.prompt_tokens, chat)
        request = self._request(prompt, max_tokens, sampling, stops, listener)
        try:
            self.scheduler.submit(request)
            while True:
                kind, value = await events.get()
                if kind == "error":
                    raise value
                yield kind, value
                if kind == "done":
                    return
        finally:
            request.cancel()  # frees its sequence if it still runs; a no-op once it ended

    async def acomplete(
        self,
        chat: list[dict[str, str]],
        *,
        max_tokens: int,
        sampling: Sampling,
        stops: list[str] | None = None,
    ) -> Outcome:
        """The finished request's outcome, awaited."""
        events = self.astream(chat, max_tokens=max_tokens, sampling=sampling, stops=stops)
        async for kind, value in events:
            if kind == "done":
                return value
        raise RuntimeError("the engine ended a request without an outcome")

    def stats(self) -> dict[str, Any]:
        """What the engine computed and reused so far (see ``EngineStats``)."""
        return self.scheduler.stats.snapshot()

    def close(self) -> None:
        """Stop serving and free the model."""
        self.scheduler.close()
        self.model.close()


_engines: dict[EngineSettings, LlamaEngine] = {}
_engines_lock = threading.Lock()


def shared_engine(settings: EngineSettings) -> LlamaEngine:
    """The process's engine for ``settings``, loaded on first use: every chat model with the
    same settings goes through it, so their calls batch together.

    Example:
        >>> from tmas.llm.model_files import smollm2_path
        >>> settings = EngineSettings(str(smollm2_path()), n_ctx=512, max_sequences=2)
        >>> shared_engine(settings) is shared_engine(settings)
        True
        >>> close_engines()
    """
    with _engines_lock:
        engine = _engines.get(settings)
        if engine is None:
            engine = _engines[settings] = LlamaEngine(settings)
        return engine


def close_engines() -> None:
    """Close every shared engine (their memory is freed; the next call loads again)."""
    with _engines_lock:
        engines = list(_engines.values())
        _engines.clear()
    for engine in engines:
        engine.close()


atexit.register(close_engines)
