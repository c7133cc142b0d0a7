"""One vLLM async engine per process, shared by every thread that asks it something.

vLLM's ``AsyncLLM`` batches continuously: a request joins the running batch at the next step
and leaves it as soon as it is done. :class:`VLLMEngine` runs it on an event loop of its own
(a background thread), so the graph's worker threads submit requests the moment they have
them and each gets its answer when its own generation ends. Cancelling a request's future
aborts the request inside the engine.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import gc
import inspect
import itertools
import json
import os
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tmas.llm.vllm.logs import captured_output, new_log_path, send_vllm_logs_to
from tmas.llm.vllm.options import check_option_names, engine_field_names
from tmas.llm.vllm.start_failures import VLLMStartError, explain_start_failure
from tmas.process_tree import descendants, guard


@dataclass
class EngineStats:
    """What an engine has served since it started.

    Example:
        >>> EngineStats(requests=2, prompt_tokens=100, cached_prompt_tokens=60).prefix_hit_rate
        0.6
    """

    requests: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    aborted: int = 0

    @property
    def prefix_hit_rate(self) -> float:
        """The share of prompt tokens the prefix cache served."""
        return self.cached_prompt_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


class VLLMEngine:
    """vLLM's ``AsyncLLM`` on a background event loop, fed from any thread.

    ``options`` are ``AsyncEngineArgs`` keyword arguments (``model`` among them). The engine
    starts on :meth:`start` (or the first request); a failure to start raises
    :class:`VLLMStartError` with one line naming the cause, the option to change and the log.

    Example (with vLLM installed)::

        engine = VLLMEngine({"model": "/models/smollm2", "max_model_len": 2048})
        ids = engine.prompt_ids([{"role": "user", "content": "2+2?"}])
        output = engine.submit(ids, {"max_tokens": 16, "seed": 1}).result()
        output.outputs[0].text
    """

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = dict(options)
        self.stats = EngineStats()
        self.log_path: Path | None = None
        self._llm: Any = None
        self._tokenizer: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._request_ids = itertools.count()
        self._watchdog: subprocess.Popen | None = None

    @property
    def label(self) -> str:
        """How errors name this engine."""
        return f"vLLM engine for {self.options.get('model')}"

    @property
    def started(self) -> bool:
        """True once the engine answers requests."""
        return self._llm is not None

    def start(self) -> None:
        """Load the model and start the engine (once; later calls return at once)."""
        with self._start_lock:
            if self._llm is not None:
                return
            with captured_output(Path(os.devnull)):  # vLLM prints notes on import
                known = engine_field_names()
            check_option_names(self.options, known)
            self.log_path = new_log_path("vllm-engine")
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=_run_loop, args=(self._loop,), name="tmas-vllm-loop", daemon=True
            )
            self._thread.start()
            before = set(descendants(os.getpid()))
            try:
                with captured_output(self.log_path):
                    send_vllm_logs_to(self.log_path)
                    future = asyncio.run_coroutine_threadsafe(self._create(), self._loop)
                    self._llm, self._tokenizer = future.result()
                    send_vllm_logs_to(self.log_path)  # vLLM set its console logging up again
                _stop_engines_at_exit()
                # vLLM's worker processes do not notice when this process is killed: a
                # watchdog stops them then.
                started = [pid for pid in descendants(os.getpid()) if pid not in before]
                self._watchdog = guard(started)
            except Exception as exc:
                self._stop_loop()
                text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
                text += f"\n{type(exc).__name__}: {exc}"
                raise VLLMStartError(
                    explain_start_failure(self.label, text, str(self.log_path))
                ) from None

    async def _create(self) -> tuple[Any, Any]:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        llm = AsyncLLM.from_engine_args(AsyncEngineArgs(**self.options))
        tokenizer = llm.get_tokenizer()
        if inspect.isawaitable(tokenizer):  # older vLLM releases
            tokenizer = await tokenizer
        return llm, tokenizer

    def prompt_ids(self, conversation: list[dict[str, str]]) -> list[int]:
        """The token ids of a chat, laid out by the model's chat template with the assistant's
        turn opened."""
        self.start()
        text = self._tokenizer.apply_chat_template(
            conversation, tokenize=False, add_generation_prompt=True
        )
        return list(self._tokenizer.encode(text, add_special_tokens=False))

    def submit(self, prompt_ids: list[int], sampling: dict[str, Any]) -> concurrent.futures.Future:
        """Send one request; the future resolves to its final ``RequestOutput``. Cancelling
        the future aborts the request in the engine."""
        self.start()
        assert self._loop is not None
        request_id = f"tmas-{next(self._request_ids)}"
        return asyncio.run_coroutine_threadsafe(
            self._generate(request_id, prompt_ids, sampling), self._loop
        )

    async def _generate(
        self, request_id: str, prompt_ids: list[int], sampling: dict[str, Any]
    ) -> Any:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        params = SamplingParams(**sampling, output_kind=RequestOutputKind.FINAL_ONLY)
        stats = self.stats
        stats.requests += 1
        stats.in_flight += 1
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
        final = None
        try:
            async for output in self._llm.generate(
                {"prompt_token_ids": prompt_ids}, params, request_id
            ):
                final = output
        except asyncio.CancelledError:
            stats.aborted += 1
            raise
        finally:
            stats.in_flight -= 1
        if final is None:
            raise RuntimeError(f"vLLM returned no output for request {request_id}")
        stats.prompt_tokens += len(final.prompt_token_ids or [])
        stats.cached_prompt_tokens += final.num_cached_tokens or 0
        stats.completion_tokens += sum(len(choice.token_ids or []) for choice in final.outputs)
        return final

    def unfinished_requests(self) -> int:
        """Requests the engine holds now (queued or running)."""
        return self._llm.get_num_unfinished_requests() if self._llm is not None else 0

    def shutdown(self) -> None:
        """Stop the engine and its worker processes (their last words go to the log)."""
        with self._start_lock:
            llm, self._llm = self._llm, None
            if llm is None:
                self._stop_loop()
                return
            assert self.log_path is not None and self._loop is not None
            with captured_output(self.log_path):
                future = asyncio.run_coroutine_threadsafe(self._close(llm), self._loop)
                try:
                    future.result(timeout=60)
                finally:
                    self._stop_loop()
                    del llm
                    gc.collect()  # drop it now, not during interpreter teardown
                    self._release_watchdog()

    def _release_watchdog(self) -> None:
        """Let the watchdog stop whatever of the engine still runs, and exit."""
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None and watchdog.stdin is not None:
            watchdog.stdin.close()
            watchdog.wait(timeout=30)

    @staticmethod
    async def _close(llm: Any) -> None:
        llm.shutdown()
        # vLLM shuts an engine down again when it is collected, which at interpreter exit
        # fails noisily; it is shut down already.
        llm.shutdown = lambda *args, **kwargs: None
        current = asyncio.current_task()
        pending = [task for task in asyncio.all_tasks() if task is not current]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=10)
        if loop is not None and not loop.is_running():
            loop.close()


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Run the engine's event loop with Ctrl-C blocked in its thread: the worker processes
    vLLM starts from it inherit the block, so a Ctrl-C at the terminal interrupts the run (which
    saves its state) instead of killing the engine under its in-flight calls."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    loop.run_forever()


_ENGINES: dict[str, VLLMEngine] = {}
_ENGINES_LOCK = threading.Lock()


def shared_engine(options: dict[str, Any]) -> VLLMEngine:
    """The process's engine for ``options`` (created, not started, on first use): every role
    and every chat model asking for the same model and options shares it.

    Example (with vLLM installed)::

        shared_engine({"model": "m"}) is shared_engine({"model": "m"})  # True
    """
    key = json.dumps(options, sort_keys=True, default=str)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _ENGINES[key] = VLLMEngine(options)
        return engine


_EXIT_HOOK: list[bool] = []


def _stop_engines_at_exit() -> None:
    """Register :func:`shutdown_engines` at exit once, after vLLM's own exit hooks exist, so
    that it runs before them (exit hooks run last registered first)."""
    with _ENGINES_LOCK:
        if not _EXIT_HOOK:
            atexit.register(shutdown_engines)
            _EXIT_HOOK.append(True)


def shutdown_engines() -> None:
    """Stop every shared engine (run at exit, so no worker process outlives the program)."""
    with _ENGINES_LOCK:
        engines = list(_ENGINES.values())
        _ENGINES.clear()
    for engine in engines:
        engine.shutdown()
