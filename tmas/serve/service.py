"""The chat service: each request runs a topology as saved runs (one per choice), in worker
threads, under the server's limits. ``tmas serve`` puts HTTP in front of it; Python code can
call it directly (:meth:`ChatService.complete`, :meth:`ChatService.stream`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel

from tmas.api import router_factory
from tmas.config import RoleModel
from tmas.graphs.run_plan import RunPlan, plan_router
from tmas.graphs.spec import GraphSpec
from tmas.lifecycle.failure_text import failure_message
from tmas.lifecycle.manager import RunCancelled, RunManager
from tmas.lifecycle.run_database import open_runs
from tmas.llm.backend import BackendSpec, custom_backend
from tmas.serve.api_errors import APIError
from tmas.serve.completions import chat_completion
from tmas.serve.requests import ChatRequest, ServeLimits, read_request, request_plan
from tmas.serve.runs import interrupted_runs, run_info
from tmas.serve.streaming import stream_chunks
from tmas.serve.topologies import offered_topologies
from tmas.storage.run_registry import new_run_id

ORIGIN = "serve"  # saved with each run this service starts
WATCH_INTERVAL_S = 0.5  # how often a waiting request looks whether its client is still there
Watch = Callable[[], Awaitable[bool]]  # True once the client has gone


@dataclass
class Launch:
    """The runs of one request, started: their ids, stop events and live events."""

    request: ChatRequest
    run_ids: list[str]
    stops: list[threading.Event]
    events: asyncio.Queue = field(default_factory=asyncio.Queue)
    futures: list[asyncio.Future] = field(default_factory=list)

    def cancel(self) -> None:
        """Stop every run of the request (each is saved as cancelled, resumable)."""
        for stop in self.stops:
            stop.set()


class ChatService:
    """Runs the topologies it offers for chat completion requests.

    Args:
        backend: the models every run uses (``BackendSpec``), as ``tmas solve`` takes them.
        topologies: name -> topology offered as a ``model`` (None: every bundled topology the
            backend can run).
        db: the run database (SQLite path or ``postgresql://`` URL); None: the default one.
        plugins: plugin modules the topologies need (saved with each run).
        roles: per-role models set by the operator (``--role-model``), kept in every run.
        memory: the lifelong memory of runs whose request names none (docs/memory.md).
        limits: what one request may ask; concurrent runs above the limit get HTTP 429.
        max_concurrency: model calls in flight per run (None: the backend's default).
        on_disconnect: ``cancel`` stops the runs of a client that went away; ``finish`` lets
            them end (``GET /v1/runs/{id}`` has their answers).
        router_factory: how a run's models are built from its plan (default: from its role
            bindings; tests pass scripted ones; :func:`tmas.api.router_factory` wraps chat
            models from Python).

    Example:
        >>> import tempfile, os
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.llm.backend import BackendSpec
        >>> service = ChatService(BackendSpec(kind="openai", model="m", base_url="http://h/v1"),
        ...                       {"tmas": load_bundled("tmas")},
        ...                       db=os.path.join(tempfile.mkdtemp(), "runs.sqlite"))
        >>> [m["id"] for m in service.models()["data"]]
        ['tmas']
        >>> service.close()
    """

    def __init__(
        self,
        backend: BackendSpec,
        topologies: Mapping[str, GraphSpec] | None = None,
        *,
        db: str | Path | None = None,
        plugins: Sequence[str] = (),
        roles: Mapping[str, RoleModel] | None = None,
        memory: str | None = None,
        limits: ServeLimits | None = None,
        max_concurrency: int | None = None,
        on_disconnect: Literal["cancel", "finish"] = "cancel",
        router_factory: Callable[[RunPlan], Any] | None = None,
    ) -> None:
        if on_disconnect not in ("cancel", "finish"):
            raise ValueError(f"on_disconnect must be cancel or finish, not {on_disconnect!r}")
        self.backend = backend
        self.topologies = dict(
            topologies if topologies is not None else offered_topologies(kind=backend.kind)
        )
        self.db = db
        self.plugins = list(plugins)
        self.fixed = {"roles": dict(roles)} if roles else {}
        self.defaults = {"memory": memory} if memory else {}
        self.limits = limits or ServeLimits()
        self.max_concurrency = max_concurrency
        self.on_disconnect = on_disconnect
        self.router_factory = router_factory or plan_router
        self._executor = ThreadPoolExecutor(
            max_workers=self.limits.max_concurrent_runs, thread_name_prefix="tmas-run"
        )
        self._lock = threading.Lock()
        self._active: dict[str, threading.Event] = {}
        self._stopping = False

    @classmethod
    def with_chat_model(
        cls,
        llm: BaseChatModel,
        topologies: Mapping[str, GraphSpec] | None = None,
        *,
        role_models: Mapping[str, BaseChatModel] | None = None,
        **options: Any,
    ) -> ChatService:
        """A service whose runs use LangChain chat models passed from Python (such runs are
        resumed from Python with the same models, not by ``tmas resume``).

        Example:
            >>> import tempfile, os
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> service = ChatService.with_chat_model(
            ...     ScriptedChatModel(), db=os.path.join(tempfile.mkdtemp(), "runs.sqlite"))
            >>> body = service.complete_sync({
            ...     "model": "majority_vote", "n_candidates": 3,
            ...     "messages": [{"role": "user", "content": "What is 9 + 9?"}]})
            >>> body["tmas"]["calls"], body["choices"][0]["finish_reason"]
            (3, 'stop')
            >>> service.close()
        """
        roles = dict(role_models or {})
        return cls(
            custom_backend(llm, roles),
            topologies,
            router_factory=router_factory(llm, roles),
            **options,
        )

    # -- what it offers ----------------------------------------------------------------------

    def models(self) -> dict[str, Any]:
        """The ``GET /v1/models`` body: one entry per topology offered."""
        return {
            "object": "list",
            "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "tmas"}
                for name in sorted(self.topologies)
            ],
        }

    def offered_plans(self) -> dict[str, RunPlan]:
        """The plan of a run of each topology offered, as a request that sets nothing gets it
        (ConfigError for a server setting a topology cannot take)."""
        return {
            name: request_plan(spec, None, self.fixed, self.defaults, self.backend, self.plugins)
            for name, spec in self.topologies.items()
        }

    def read(self, body: Any) -> ChatRequest:
        """The checked request (APIError for a bad one); nothing runs yet."""
        return read_request(body, self.topologies, self.limits, self.fixed, self.defaults,
                            self.backend, self.plugins)  # fmt: skip

    def run(self, run_id: str) -> dict[str, Any]:
        """The record of a run this service started (``GET /v1/runs/{id}``); 404 otherwise
        (a run accepted but not yet saved is ``starting``)."""
        try:
            return run_info(self.db, run_id, ORIGIN)
        except APIError as exc:
            with self._lock:
                starting = run_id in self._active
            if exc.status == 404 and starting:
                return {"id": run_id, "object": "tmas.run", "status": "starting"}
            raise

    # -- running -----------------------------------------------------------------------------

    def _admit(self, run_ids: Sequence[str]) -> list[threading.Event]:
        with self._lock:
            if self._stopping:
                raise APIError(503, "the server is shutting down")
            busy = len(self._active)
            if busy + len(run_ids) > self.limits.max_concurrent_runs:
                raise APIError(
                    429,
                    f"{busy} runs are in progress and this request needs {len(run_ids)}; the "
                    f"server runs at most {self.limits.max_concurrent_runs} at once: retry later",
                    code="too_many_runs",
                )
            stops = [threading.Event() for _ in run_ids]
            self._active.update(zip(run_ids, stops, strict=True))
            return stops

    def _release(self, run_id: str) -> None:
        with self._lock:
            self._active.pop(run_id, None)

    def _drive(
        self,
        run_id: str,
        plan: RunPlan | None,
        request: ChatRequest | None,
        sink: Callable[[dict[str, Any]], None] | None,
        stop: threading.Event,
    ) -> dict[str, Any]:
        """Start (``request``) or resume (None) one run in this worker thread; its final state."""
        storage = open_runs(self.db, for_writing=True)
        try:
            manager = RunManager(storage, router_factory=self.router_factory)
            options = dict(
                show_progress=False, max_concurrency=self.max_concurrency, on_event=sink,
                stop=stop,
            )  # fmt: skip
            try:
                if request is None:
                    return manager.resume(run_id, **options).state
                return manager.start(
                    run_id, problem=request.problem, gold_answer=None, plan=plan,
                    origin=ORIGIN, **options,
                ).state  # fmt: skip
            except RunCancelled:
                if not self._stopping:
                    raise
                # the server stopped it, not its client: a restart resumes it
                manager.registry.set_status(run_id, "interrupted", "the server stopped")
                raise APIError(
                    503,
                    f"the server stopped; run {run_id} is saved and continues when it restarts "
                    f"with --resume-interrupted (or: tmas resume {run_id})",
                    code="server_stopped",
                ) from None
        finally:
            storage.close()
            self._release(run_id)

    def launch(self, request: ChatRequest, *, events: bool | None = None) -> Launch:
        """Start the request's runs (call from the event loop that will read their events);
        APIError 429 when the server is full. The agents' live events are queued when
        ``events`` (default: when the request streams)."""
        events = request.stream if events is None else events
        run_ids = [new_run_id() for _ in range(request.n)]
        launch = Launch(request, run_ids, self._admit(run_ids))
        loop = asyncio.get_running_loop()
        for index, (run_id, plan) in enumerate(zip(run_ids, request.run_plans(), strict=True)):

            def sink(event: dict[str, Any], index: int = index) -> None:
                loop.call_soon_threadsafe(launch.events.put_nowait, (index, "event", event))

            future = loop.run_in_executor(
                self._executor, self._drive, run_id, plan, request,
                sink if events else None, launch.stops[index],
            )  # fmt: skip
            future.add_done_callback(partial(_ended, launch, index))
            launch.futures.append(future)
        return launch

    async def finish(self, launch: Launch, watch: Watch | None = None) -> dict[str, Any]:
        """The chat completion of a launched request, once every run ended. ``watch`` tells
        whether the client left (then ``on_disconnect`` applies and 499 is raised)."""
        pending = set(launch.futures)
        while pending:
            _, pending = await asyncio.wait(pending, timeout=WATCH_INTERVAL_S)
            if pending and watch is not None and await watch():
                if self.on_disconnect == "cancel":
                    launch.cancel()
                raise APIError(499, "the client closed the request")
        states = [run_result(launch, index) for index in range(len(launch.futures))]
        return chat_completion(launch.request.model, launch.run_ids, states)

    async def complete(self, body: Any) -> dict[str, Any]:
        """Run a chat completion request in-process: the response body an HTTP client gets.

        Example:
            >>> # service.complete({"model": "tmas", "messages": [...]}) inside a coroutine
        """
        return await self.finish(self.launch(self.read(body)))

    def complete_sync(self, body: Any) -> dict[str, Any]:
        """:meth:`complete` from synchronous code (not from inside a running event loop)."""
        return asyncio.run(self.complete(body))

    def stream(self, body_or_launch: Any) -> AsyncIterator[dict[str, Any]]:
        """The request's ``chat.completion.chunk`` dicts: progress as ``reasoning_content``,
        then each answer, then a last chunk with the usage of every call (an ``error`` dict
        if a run failed). Closing the iterator early applies ``on_disconnect``."""
        launch = body_or_launch
        if not isinstance(launch, Launch):
            launch = self.launch(self.read(body_or_launch), events=True)
        return stream_chunks(launch, run_result, self.on_disconnect == "cancel")

    def resume_interrupted(self) -> list[str]:
        """Resume, in the background, the runs of this service that a killed or stopped server
        left unfinished; their ids."""
        resumed = []
        for run_id in interrupted_runs(self.db, ORIGIN):
            try:
                (stop,) = self._admit([run_id])
            except APIError:
                break  # as many as the limit allows; the rest wait for the next start
            self._executor.submit(self._drive, run_id, None, None, None, stop)
            resumed.append(run_id)
        return resumed

    def begin_shutdown(self) -> None:
        """Refuse new requests and stop every run now: each is saved as interrupted by the
        server, and a restart with ``--resume-interrupted`` continues it."""
        with self._lock:
            self._stopping = True
            stopping = list(self._active.values())
        for stop in stopping:
            stop.set()

    def close(self) -> None:
        """:meth:`begin_shutdown`, then wait for the worker threads to end."""
        self.begin_shutdown()
        self._executor.shutdown(wait=True, cancel_futures=True)


def _ended(launch: Launch, index: int, done: asyncio.Future) -> None:
    """Tell the request's reader that run ``index`` ended (its outcome is read from the
    future; marked as seen here, so a run nobody waits for any more logs nothing)."""
    if not done.cancelled():
        done.exception()
    launch.events.put_nowait((index, "done", done))


def run_result(launch: Launch, index: int) -> dict[str, Any]:
    """The final state of run ``index`` of a launch; APIError saying how it failed."""
    run_id = launch.run_ids[index]
    try:
        return launch.futures[index].result()
    except RunCancelled:
        raise APIError(499, f"run {run_id} was cancelled") from None
    except APIError:
        raise
    except Exception as exc:  # noqa: BLE001 - reported to the client, never a traceback
        raise APIError(
            502,
            f"run {run_id} failed: {failure_message(exc, 'the run database')}; it is saved: "
            f"continue it with `tmas resume {run_id}`",
            code="run_failed",
        ) from None
