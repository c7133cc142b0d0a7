"""A chat model for OpenAI-compatible endpoints (``vllm serve``, llama.cpp's server, OpenAI):
pooled connections, finite timeouts, optional retries, streaming, and the
error semantics of :mod:`tmas.llm.errors` (401/403/404 and a prompt too long for the context
are fatal, lost connections, timeouts and 408/409/429/5xx transient).

It is a LangChain chat model like any other, and it also answers :meth:`complete` and
:meth:`acomplete`, which the router calls directly: one JSON body out, one parsed reply in, no
callback managers, message objects or response models on the way.

Async calls go through aiohttp: with 1,024 calls in flight on one loop, a bare httpx loop spent
7.6 times the CPU per call of a bare aiohttp loop (its pool scans every connection for each
request; ``benchmarks/client_throughput.py``, ``benchmarks/RESULTS.md``). :meth:`acomplete`
uses one session per event loop (a session's connections belong to the loop that opened it;
close it with :meth:`aclose`); LangChain's ``ainvoke``/``astream`` use a session of their own
per call. Sync calls, made from threads, go through one thread-safe ``httpx.Client`` (aiohttp
has none). Calls made through :meth:`complete`/:meth:`acomplete` are not LangChain runs: no
callbacks or LangSmith traces see them.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

import aiohttp
import httpx
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr, SecretStr

from tmas.llm.chat_results import Choice, chat_result, stream_chunk
from tmas.llm.errors import is_transient, retry_after_s
from tmas.llm.openai_wire import (
    ChatReply,
    EndpointStatusError,
    chat_request,
    read_reply,
    role_headers,
    stream_event,
    stream_settings,
    to_chat_dicts,
)

NO_KEY = "EMPTY"  # vLLM and llama.cpp servers started without --api-key accept any key
DEFAULT_POOL = 100  # connections kept per event loop at least (openai's own default too)
RETRY_BASE_S = 0.5
RETRY_CAP_S = 8.0


def finite_timeout(timeout: float) -> float:
    """``timeout`` when it is a positive, finite number of seconds; ValueError otherwise (a hung
    server must not hang a run).

    Example:
        >>> finite_timeout(30)
        30.0
        >>> finite_timeout(float("inf"))
        Traceback (most recent call last):
        ...
        ValueError: timeout must be a positive number of seconds, not inf
    """
    if not 0 < timeout < math.inf:
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
    return float(timeout)


def new_session(pool_size: int, timeout: float) -> aiohttp.ClientSession:
    """An aiohttp session of ``pool_size`` connections whose connects and reads each wait at
    most ``timeout`` seconds, honouring the proxy settings of the environment (as httpx does).
    Call it on the event loop that will use it."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=pool_size),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout),
        trust_env=True,
    )


def api_key_from_env(api_key_env: str) -> SecretStr:
    """The key in ``api_key_env``, else in ``OPENAI_API_KEY``, else a placeholder.

    Example:
        >>> api_key_from_env("NO_SUCH_VARIABLE_HERE").get_secret_value() in ("EMPTY",
        ...     os.environ.get("OPENAI_API_KEY"))
        True
    """
    key = os.environ.get(api_key_env) or os.environ.get("OPENAI_API_KEY") or NO_KEY
    return SecretStr(key)


def retry_wait_s(attempt: int, exc: BaseException) -> float:
    """How long to wait before retry ``attempt`` (1, 2, ...): what the server asked, else a
    doubling backoff.

    Example:
        >>> retry_wait_s(1, ConnectionResetError()), retry_wait_s(5, ConnectionResetError())
        (0.5, 8.0)
    """
    asked = retry_after_s(exc)
    return asked if asked is not None else min(RETRY_BASE_S * 2 ** (attempt - 1), RETRY_CAP_S)


class EndpointChatModel(BaseChatModel):
    """An OpenAI-compatible ``/chat/completions`` endpoint as a chat model.

    ``base_url`` is the server's ``/v1`` root; ``model`` the served model's name; the key is
    sent as a bearer token and never printed. ``timeout`` bounds each request (finite: a hung
    server must not hang a run); ``max_retries`` retries transient failures here (0 by
    default: TMAS retries failed calls itself, through the graph's retry policy); ``pool_size``
    is the most connections kept per event loop.

    Example:
        >>> chat = EndpointChatModel(base_url="http://127.0.0.1:9/v1", model="m", max_tokens=8)
        >>> chat.model_name, chat.completions_url
        ('m', 'http://127.0.0.1:9/v1/chat/completions')
    """

    model_config = ConfigDict(populate_by_name=True, arbitrary_types_allowed=True)

    base_url: str
    model_name: str = Field(alias="model")
    api_key: SecretStr = Field(default_factory=lambda: SecretStr(NO_KEY))
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    timeout: float = 600.0
    max_retries: int = 0
    pool_size: int = DEFAULT_POOL

    _sync_client: httpx.Client | None = PrivateAttr(default=None)
    _sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = PrivateAttr(
        default_factory=dict
    )
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    def model_post_init(self, context: Any) -> None:
        """Refuse an unbounded timeout or a negative retry count at once."""
        finite_timeout(self.timeout)
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, not {self.max_retries}")

    @property
    def _llm_type(self) -> str:
        return "openai-endpoint"

    @property
    def completions_url(self) -> str:
        """Where requests go."""
        return f"{self.base_url.rstrip('/')}/chat/completions"

    def with_pool(self, pool_size: int) -> EndpointChatModel:
        """A copy with its own connections, ``pool_size`` of them per event loop.

        Example:
            >>> chat = EndpointChatModel(base_url="http://127.0.0.1:9/v1", model="m")
            >>> chat.with_pool(256).pool_size
            256
        """
        return self.model_copy(update={"pool_size": pool_size})

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any:
        """A copy with the same settings (and ``update``) and connections of its own.

        Example:
            >>> chat = EndpointChatModel(base_url="http://127.0.0.1:9/v1", model="m")
            >>> chat.model_copy()._lock is chat._lock
            False
        """
        copy = super().model_copy(update=update, deep=deep)
        copy._sync_client, copy._sessions, copy._lock = None, {}, threading.Lock()
        return copy

    # ---- the wire -------------------------------------------------------------------------

    def _headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.api_key.get_secret_value()}"}
        return {**headers, **(extra or {})}

    def _client(self) -> httpx.Client:
        """The client of sync calls: as many connections as there are calls in flight (the
        router bounds those), ``pool_size`` of them kept open."""
        with self._lock:
            if self._sync_client is None:
                limits = httpx.Limits(max_connections=None,
                                      max_keepalive_connections=self.pool_size)  # fmt: skip
                self._sync_client = httpx.Client(timeout=self.timeout, limits=limits)
            return self._sync_client

    def _session(self) -> aiohttp.ClientSession:
        """The running loop's session (made on first use; those of closed loops dropped)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            for gone in [other for other in self._sessions if other.is_closed()]:
                del self._sessions[gone]
            session = self._sessions.get(loop)
            if session is None or session.closed:
                session = self._sessions[loop] = new_session(self.pool_size, self.timeout)
            return session

    def _body(self, messages: Sequence[Mapping[str, str]], **settings: Any) -> dict[str, Any]:
        pick = {k: settings.get(k, getattr(self, k)) for k in ("max_tokens", "temperature", "seed")}
        return chat_request(self.model_name, messages, stop=settings.get("stop"), **pick)

    @staticmethod
    def _checked(response: httpx.Response) -> Any:
        if response.status_code != 200:
            raise EndpointStatusError(response.status_code, response.text, response)
        return response.json()

    def complete(
        self, messages: Sequence[Mapping[str, str]], *, headers: Mapping[str, str] | None = None,
        **settings: Any,
    ) -> ChatReply:  # fmt: skip
        """Ask once, in this thread (``settings``: ``max_tokens``, ``temperature``, ``seed``,
        ``stop``; the model's own where not given). Raises the transport's or
        :class:`EndpointStatusError` after ``max_retries`` retries of transient failures.

        Example:
            >>> from tmas.testing.fake_openai_server import FakeOpenAIServer
            >>> with FakeOpenAIServer() as server:
            ...     chat = EndpointChatModel(base_url=server.base_url, model="scripted")
            ...     reply = chat.complete([{"role": "user", "content": "What is 9 + 9?"}],
            ...                           headers={"X-TMAS-Role": "solver"}, max_tokens=16)
            ...     chat.close()
            >>> "boxed{18}" in reply.text, reply.output_tokens > 0
            (True, True)
        """
        body, sent = self._body(messages, **settings), self._headers(headers)
        for attempt in range(self.max_retries + 1):
            try:
                response = self._client().post(self.completions_url, json=body, headers=sent)
                return read_reply(self._checked(response))
            except Exception as exc:
                if attempt == self.max_retries or not is_transient(exc):
                    raise
                time.sleep(retry_wait_s(attempt + 1, exc))
        raise AssertionError("unreachable")

    async def acomplete(
        self, messages: Sequence[Mapping[str, str]], *, headers: Mapping[str, str] | None = None,
        session: aiohttp.ClientSession | None = None, **settings: Any,
    ) -> ChatReply:  # fmt: skip
        """:meth:`complete` on the running event loop, through ``session``, else the loop's
        own (close it with :meth:`aclose` when the loop's work is done).

        Example:
            >>> from tmas.testing.fake_openai_server import FakeOpenAIServer
            >>> async def ask(chat):
            ...     try:
            ...         return await chat.acomplete([{"role": "user", "content": "9 + 9?"}],
            ...                                     headers={"X-TMAS-Role": "solver"})
            ...     finally:
            ...         await chat.aclose()
            >>> with FakeOpenAIServer() as server:
            ...     reply = asyncio.run(ask(EndpointChatModel(base_url=server.base_url,
            ...                                               model="scripted")))
            >>> "boxed{18}" in reply.text
            True
        """
        body, sent = self._body(messages, **settings), self._headers(headers)
        for attempt in range(self.max_retries + 1):
            try:
                used = session or self._session()
                async with used.post(self.completions_url, json=body, headers=sent) as got:
                    text = await got.read()
                    if got.status != 200:
                        raise EndpointStatusError(got.status, text.decode(errors="replace"), got)
                return read_reply(json.loads(text))
            except Exception as exc:
                if attempt == self.max_retries or not is_transient(exc):
                    raise
                await asyncio.sleep(retry_wait_s(attempt + 1, exc))
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        """Close the running loop's connections (the end of a run on that loop)."""
        with self._lock:
            session = self._sessions.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()

    def close(self) -> None:
        """Close the connections of synchronous calls."""
        with self._lock:
            client, self._sync_client = self._sync_client, None
        if client is not None:
            client.close()

    # ---- LangChain ------------------------------------------------------------------------

    @staticmethod
    def _result(reply: ChatReply, model_name: str) -> ChatResult:
        choice = Choice(reply.text, reply.output_tokens, reply.finish_reason)
        return chat_result(reply.input_tokens, [choice], model_name)

    @staticmethod
    def _call_headers(run_manager: Any, kwargs: dict[str, Any]) -> dict[str, str]:
        """A LangChain call's role headers: its ``headers=`` (taken out of ``kwargs``), else
        its run's metadata."""
        return kwargs.pop("headers", None) or role_headers(getattr(run_manager, "metadata", None))

    def _stream_request(
        self, messages: list[BaseMessage], stop: list[str] | None, run_manager: Any,
        kwargs: dict[str, Any],
    ) -> tuple[dict[str, Any], dict[str, str]]:  # fmt: skip
        """The body and headers of a streamed LangChain call."""
        extra = self._call_headers(run_manager, kwargs)
        body = self._body(to_chat_dicts(messages), stop=stop, **kwargs) | stream_settings()
        return body, self._headers(extra)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        extra = self._call_headers(run_manager, kwargs)
        reply = self.complete(to_chat_dicts(messages), headers=extra, stop=stop, **kwargs)
        return self._result(reply, self.model_name)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        extra = self._call_headers(run_manager, kwargs)
        async with new_session(self.pool_size, self.timeout) as session:  # this call's own
            reply = await self.acomplete(
                to_chat_dicts(messages), headers=extra, session=session, stop=stop, **kwargs
            )
        return self._result(reply, self.model_name)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        body, sent = self._stream_request(messages, stop, run_manager, kwargs)
        with self._client().stream("POST", self.completions_url, json=body, headers=sent) as got:
            if got.status_code != 200:
                raise EndpointStatusError(got.status_code, got.read().decode(errors="replace"), got)
            for line in got.iter_lines():
                chunk = stream_chunk(stream_event(line))
                if chunk is not None:
                    yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        body, sent = self._stream_request(messages, stop, run_manager, kwargs)
        async with (
            new_session(self.pool_size, self.timeout) as session,
            session.post(self.completions_url, json=body, headers=sent) as got,
        ):
            if got.status != 200:
                text = (await got.read()).decode(errors="replace")
                raise EndpointStatusError(got.status, text, got)
            async for line in got.content:
                chunk = stream_chunk(stream_event(line.decode().strip()))
                if chunk is not None:
                    yield chunk
