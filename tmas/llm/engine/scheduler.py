"""Continuous batching over one llama.cpp context: requests join and leave between steps.

Each step feeds one ``llama_decode`` with the next token of every decoding sequence and as
much of the waiting prompts as ``n_batch`` allows, then samples every sequence that needs a
token with its own sampler. A prompt starting like one already in the KV cache (a sibling in
flight, or a finished request whose sequence is idle) copies that prefix instead of
computing it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tmas.llm.engine.loaded_model import LoadedModel
from tmas.llm.engine.request import GenerationRequest, Outcome, StopText, make_sampler
from tmas.llm.engine.slots import Slot, SlotTable, shared_length
from tmas.llm.engine.stats import EngineStats
from tmas.llm.errors import ContextOverflowError

# A prompt waits for a sibling's prefill rather than compute a prefix it could copy when at
# least this many tokens would be saved.
_WORTH_WAITING = 16


def _notify(request: GenerationRequest, event: tuple[str, Any]) -> None:
    """Tell a request's listener; a listener that fails (its caller gone, its event loop
    closed) cancels its own request and never stops the engine."""
    try:
        request.listener(event)
    except Exception:  # noqa: BLE001 - the caller's problem, not the engine's
        request.cancel()


class EngineError(RuntimeError):
    """llama.cpp failed to decode a batch; the requests in it fail with this error."""


class RequestCancelled(RuntimeError):
    """The request was cancelled before it finished."""


@dataclass(eq=False)
class _Running:
    request: GenerationRequest
    slot: Slot
    sampler: Any
    pending: list[int]
    position: int
    cached: int
    text: StopText
    output_tokens: int = 0
    next_token: int | None = None
    fed: list[int] = field(default_factory=list)
    fork_points: set[int] = field(default_factory=set)

    def chunk_limit(self, room: int) -> int:
        """How many prompt tokens to feed now: up to ``room``, pausing at the next point
        where a waiting sibling will copy the prefix."""
        ahead = [p - self.position for p in self.fork_points if p > self.position]
        return min([room, *ahead])


class BatchScheduler:
    """Owns the context of ``model``; serves requests submitted from any thread.

    Example:
        >>> from tmas.llm.engine.loaded_model import EngineSettings, LoadedModel
        >>> from tmas.llm.engine.request import Sampling
        >>> from tmas.llm.model_files import smollm2_path
        >>> model = LoadedModel(EngineSettings(str(smollm2_path()), n_ctx=512, max_sequences=2))
        >>> scheduler = BatchScheduler(model)
        >>> events = []
        >>> request = GenerationRequest(model.tokenize("Hi"), 4, Sampling(0.0), events.append)
        >>> scheduler.submit(request)
        >>> scheduler.wait_idle()
        True
        >>> events[-1][0], events[-1][1].output_tokens
        ('done', 4)
        >>> scheduler.close()
    """

    def __init__(self, model: LoadedModel) -> None:
        self.model = model
        self.lib = model.lib
        self.n_batch = model.settings.n_batch
        self.slots = SlotTable(model.settings.max_sequences)
        self.stats = EngineStats()
        self._pending: list[GenerationRequest] = []
        self._running: list[_Running] = []
        self._cond = threading.Condition()
        self._closing = False
        self._batch = self.lib.llama_batch_init(self.n_batch, 0, 1)
        self._thread = threading.Thread(target=self._loop, name="llama-engine", daemon=True)
        self._thread.start()

    # ---- the caller's side -------------------------------------------------------------

    def submit(self, request: GenerationRequest) -> None:
        """Queue ``request``; its listener hears the result from the engine's thread."""
        limit = self.model.settings.n_ctx
        if not request.prompt:
            raise ValueError("empty prompt: a request needs at least one token")
        if len(request.prompt) >= limit:
            raise ContextOverflowError(
                f"prompt too long for the context window: {len(request.prompt)} prompt tokens, "
                f"n_ctx={limit}; shorten the prompt or raise n_ctx"
            )
        request.max_tokens = max(1, min(request.max_tokens, limit - len(request.prompt)))
        with self._cond:
            if self._closing:
                raise RuntimeError("the llama.cpp engine is closed")
            self._pending.append(request)
            self._cond.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no request is waiting or running (True), or ``timeout`` passes."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._pending or self._running:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self) -> None:
        """Fail what is left, stop the thread and free the batch (the model is the caller's)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._thread.join()
        self.lib.llama_batch_free(self._batch)

    # ---- the engine's thread -----------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not (self._pending or self._running or self._closing):
                    self._cond.wait()
                if self._closing:
                    break
            try:
                self._drop_cancelled()
                self._admit()
                if self._running:
                    started = time.perf_counter()
                    self._step()
                    self.stats.busy(time.perf_counter() - started)
            except Exception as exc:  # noqa: BLE001 - any failure fails the requests, not the engine
                self._fail(list(self._running), EngineError(f"llama.cpp engine failed: {exc}"))
            with self._cond:
                self._cond.notify_all()
        with self._cond:
            stranded, self._pending = self._pending, []
        self._fail(list(self._running), RequestCancelled("the llama.cpp engine was closed"))
        for request in stranded:
            _notify(request, ("error", RequestCancelled("the llama.cpp engine was closed")))

    def _drop_cancelled(self) -> None:
        with self._cond:
            dropped = [r for r in self._pending if r.cancelled.is_set()]
            self._pending = [r for r in self._pending if not r.cancelled.is_set()]
        for request in dropped:
            _notify(request, ("error", RequestCancelled("request cancelled")))
        cancelled = [r for r in self._running if r.request.cancelled.is_set()]
        self._fail(cancelled, RequestCancelled("request cancelled"))

    def _admit(self) -> None:
        with self._cond:
            waiting = list(self._pending)
        for request in waiting:
            if not self._fits(request):
                break  # first come, first served: later requests do not overtake it
            if self._try_start(request):
                with self._cond:
                    self._pending.remove(request)
            elif self.slots.take_free() is None:
                break

    def _try_start(self, request: GenerationRequest) -> bool:
        prompt = request.prompt
        if not self.model.settings.prefix_cache:
            return self._start(request, self.slots.take_free(), 0)
        source, length = self.slots.longest_prefix(prompt)
        sibling, ahead = self._sibling_prefill_ahead(prompt)
        if sibling is not None and ahead >= length + _WORTH_WAITING:
            sibling.fork_points.add(ahead)  # copy the sibling's prefix once it is computed
            return False
        length = min(length, len(prompt) - 1)
        if source is not None and not source.busy and length > 0:
            target = source
        else:
            target = self.slots.take_free()
            if target is None:
                return False
            if source is not None and length > 0:
                self._clear(target)
                self._copy_prefix(source, target, length)
        return self._start(request, target, length)

    def _start(self, request: GenerationRequest, target: Slot | None, length: int) -> bool:
        """Run ``request`` on ``target``, whose cache holds its first ``length`` tokens."""
        if target is None:
            return False
        if length and not self.lib.llama_memory_seq_rm(
            self.model.memory, target.seq_id, length, -1
        ):  # this memory cannot cut a sequence in the middle: compute the prompt in full
            length = 0
        if not length:
            self._clear(target, always=True)
        del target.tokens[length:]
        prompt = request.prompt
        target.busy = True
        target.touch()
        self._running.append(
            _Running(
                request=request,
                slot=target,
                sampler=make_sampler(self.lib, request.sampling),
                pending=prompt[length:],
                position=length,
                cached=length,
                text=StopText(request.stops),
            )
        )
        self.stats.admitted(len(prompt), length)
        return True

    def _fits(self, request: GenerationRequest) -> bool:
        """Whether the KV cache holds this request beside the running ones at their longest
        (always, unless a unified cache was made smaller than ``n_ctx * max_sequences``)."""
        if not self.model.settings.kv_unified:
            return True
        held = sum(len(r.request.prompt) + r.request.max_tokens for r in self._running)
        return held + len(request.prompt) + request.max_tokens <= self.model.settings.total_cells()

    def _sibling_prefill_ahead(self, prompt: list[int]) -> tuple[_Running | None, int]:
        """The request still prefilling whose prompt shares most with ``prompt``, and how much
        (at most all of ``prompt`` but its last token, which must be decoded for logits)."""
        best: _Running | None = None
        best_length = 0
        for running in self._running:
            if running.pending:
                length = min(shared_length(running.request.prompt, prompt), len(prompt) - 1)
                if length > best_length:
                    best, best_length = running, length
        return best, best_length

    def _copy_prefix(self, source: Slot, target: Slot, length: int) -> None:
        memory = self.model.memory
        if self.model.settings.kv_unified:
            self.lib.llama_memory_seq_cp(memory, source.seq_id, target.seq_id, 0, length)
        else:  # separate streams copy whole sequences only; trim the copy to the prefix
            self.lib.llama_memory_seq_cp(memory, source.seq_id, target.seq_id, -1, -1)
        target.tokens = source.tokens[:length]

    def _clear(self, slot: Slot, *, always: bool = False) -> None:
        """Drop a sequence's cache (``always``: even cells the table does not know of, which
        a failed decode may have left behind)."""
        if slot.tokens or always:
            self.lib.llama_memory_seq_rm(self.model.memory, slot.seq_id, -1, -1)
            slot.tokens = []

    def _step(self) -> None:
        sampled, decoded, prefilled = self._fill_batch()
        started = time.perf_counter()
        result = self.lib.llama_decode(self.model.ctx, self._batch)
        if result == 1 and self._evict_idle():
            result = self.lib.llama_decode(self.model.ctx, self._batch)
        self.stats.step(decoded, prefilled, time.perf_counter() - started)
        fed = [running for running in self._running if running.fed]
        if result != 0:
            self._fail(fed, self._decode_error(result))
            return
        for running in fed:
            running.slot.tokens.extend(running.fed)
            running.position += len(running.fed)
            running.fed = []
        for running, index in sampled:
            self._sample(running, index)

    def _fill_batch(self) -> tuple[list[tuple[_Running, int]], int, int]:
        """Load the batch. Returns (sequence, batch index) for every token whose logits are
        sampled, and how many decode and prompt tokens the batch holds."""
        batch, budget, count = self._batch, self.n_batch, 0
        sampled: list[tuple[_Running, int]] = []

        def put(running: _Running, token: int, logits: bool) -> None:
            nonlocal count
            batch.token[count] = token
            batch.pos[count] = running.position + len(running.fed)
            batch.n_seq_id[count] = 1
            batch.seq_id[count][0] = running.slot.seq_id
            batch.logits[count] = 1 if logits else 0
            running.fed.append(token)
            if logits:
                sampled.append((running, count))
            count += 1

        for running in self._running:
            if running.next_token is not None:
                put(running, running.next_token, True)
                running.next_token = None
        decoded = count
        for running in self._running:
            if running.pending and count < budget:
                chunk = running.pending[: running.chunk_limit(budget - count)]
                running.pending = running.pending[len(chunk) :]
                for i, token in enumerate(chunk):
                    put(running, token, i == len(chunk) - 1 and not running.pending)
        batch.n_tokens = count
        return sampled, decoded, count - decoded

    def _evict_idle(self) -> bool:
        idle = self.slots.idle_cached()
        for slot in idle:
            self._clear(slot)
        return bool(idle)

    def _decode_error(self, code: int) -> Exception:
        if code == 1:
            return ContextOverflowError(
                f"the KV cache is full ({self.model.settings.total_cells()} cells for "
                f"{len(self._running)} sequences); lower max_sequences or raise n_ctx"
            )
        return EngineError(f"llama_decode failed with code {code}")

    def _sample(self, running: _Running, index: int) -> None:
        token = self.lib.llama_sampler_sample(running.sampler, self.model.ctx, index)
        if self.model.is_end(token):
            self._finish(running, "stop")
            return
        running.output_tokens += 1
        fresh = running.text.feed(self.model.piece(token))
        if fresh:
            _notify(running.request, ("text", fresh))
        if running.text.stopped:
            self._finish(running, "stop")
        elif running.output_tokens >= running.request.max_tokens:
            self._finish(running, "length")
        else:
            running.next_token = token

    def _finish(self, running: _Running, reason: str) -> None:
        tail = running.text.feed(b"", final=True)
        if tail:
            _notify(running.request, ("text", tail))
        self._release(running)
        self.stats.finished(running.output_tokens)
        _notify(
            running.request,
            (
                "done",
                Outcome(
                    text=running.text.text,
                    finish_reason=reason,
                    prompt_tokens=len(running.request.prompt),
                    output_tokens=running.output_tokens,
                    cached_tokens=running.cached,
                ),
            ),
        )

    def _release(self, running: _Running) -> None:
        self.lib.llama_sampler_free(running.sampler)
        running.slot.busy = False
        running.slot.touch()
        self._running.remove(running)

    def _fail(self, failed: list[_Running], error: Exception) -> None:
        for running in failed:
            if running not in self._running:
                continue
            self._clear(running.slot, always=True)
            self._release(running)
            _notify(running.request, ("error", error))
