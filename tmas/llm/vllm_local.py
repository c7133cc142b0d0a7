"""vLLM run in-process as a langchain-core chat model, with concurrent calls batched.

A TMAS graph calls its model from many threads at once (N solvers, N x M verifiers). vLLM
is fastest when it receives those requests together, so :class:`ChatVLLM` gathers the calls
that arrive within ``batch_window_ms`` of each other and sends them as ONE ``LLM.chat`` call.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

from tmas.llm.llamacpp import to_chat_dicts

__all__ = ["ChatVLLM", "MicroBatcher", "sampling_kwargs", "to_chat_dicts", "to_chat_result"]


def sampling_kwargs(
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: int | None,
    n: int,
    stop: Sequence[str] | None,
) -> dict[str, Any]:
    """Return keyword arguments for ``vllm.SamplingParams``.

    Example:
        >>> sampling_kwargs(64, 0.7, 0.95, None, 2, ["END"])
        {'n': 2, 'max_tokens': 64, 'temperature': 0.7, 'top_p': 0.95, 'stop': ['END']}
    """
    kwargs: dict[str, Any] = {
        "n": int(n),
        "max_tokens": int(max_tokens),
        "temperature": float(temperature),
        "top_p": float(top_p),
    }
    if seed is not None:
        kwargs["seed"] = int(seed)
    if stop:
        kwargs["stop"] = list(stop)
    return kwargs


def to_chat_result(output: Any, model_name: str) -> ChatResult:
    """Convert one vLLM ``RequestOutput`` into a ChatResult with one generation per choice.

    The prompt's tokens are counted once, on the first generation, so that summing usage
    over the generations gives the request's true total; ``llm_output["token_usage"]``
    holds that total too.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> out = NS(prompt_token_ids=[1, 2], outputs=[
        ...     NS(text="hi", token_ids=[5], finish_reason="stop")])
        >>> to_chat_result(out, "m").generations[0].message.usage_metadata["total_tokens"]
        3
    """
    prompt_tokens = len(output.prompt_token_ids or [])
    generations: list[ChatGeneration] = []
    completion_tokens = 0
    for index, choice in enumerate(output.outputs):
        input_tokens = prompt_tokens if index == 0 else 0
        output_tokens = len(choice.token_ids or [])
        completion_tokens += output_tokens
        message = AIMessage(
            content=choice.text,
            usage_metadata={
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
            response_metadata={"finish_reason": choice.finish_reason, "model_name": model_name},
        )
        generations.append(ChatGeneration(message=message))
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    return ChatResult(
        generations=generations, llm_output={"token_usage": usage, "model_name": model_name}
    )


@dataclass
class _Request:
    conversation: list[dict[str, str]]
    sampling: dict[str, Any]
    future: Future = field(default_factory=Future)


_STOP = object()


class MicroBatcher:
    """Gathers requests from many threads and runs them together in one batch call.

    A worker thread waits for a request, then for ``window_s`` more seconds collects any
    others, calls ``run_batch(conversations, samplings)`` once and resolves each future.

    Example:
        >>> batcher = MicroBatcher(lambda convs, params: [len(c) for c in convs], 0.01)
        >>> batcher.submit([{"role": "user", "content": "hi"}], {}).result()
        1
        >>> batcher.close()
    """

    def __init__(
        self,
        run_batch: Callable[[list[list[dict[str, str]]], list[dict[str, Any]]], list[Any]],
        window_s: float,
    ) -> None:
        self._run_batch = run_batch
        self._window_s = max(0.0, window_s)
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None

    def submit(self, conversation: list[dict[str, str]], sampling: dict[str, Any]) -> Future:
        """Queue one request; the returned future resolves to its batch result."""
        request = _Request(conversation, sampling)
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._loop, name="tmas-vllm-batcher", daemon=True
                )
                self._worker.start()
            self._queue.put(request)
        return request.future

    def close(self) -> None:
        """Stop the worker after the requests already queued."""
        with self._lock:
            worker, self._worker = self._worker, None
            if worker is not None:
                self._queue.put(_STOP)
        if worker is not None and worker is not threading.current_thread():
            worker.join()

    def _collect(self, first: _Request) -> tuple[list[_Request], bool]:
        batch = [first]
        deadline = time.monotonic() + self._window_s
        while True:
            remaining = max(0.0, deadline - time.monotonic())
            try:
                item = self._queue.get(block=remaining > 0, timeout=remaining or None)
            except queue.Empty:
                return batch, False
            if item is _STOP:
                return batch, True
            batch.append(item)

    def _loop(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is _STOP:
                return
            batch, stop = self._collect(first)
            try:
                results = self._run_batch(
                    [r.conversation for r in batch], [r.sampling for r in batch]
                )
                if len(results) != len(batch):
                    raise RuntimeError(
                        f"batch returned {len(results)} results for {len(batch)} requests"
                    )
            except BaseException as exc:  # noqa: BLE001 - every caller must hear of it
                for request in batch:
                    request.future.set_exception(exc)
                continue
            for request, result in zip(batch, results, strict=True):
                request.future.set_result(result)


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(
            "the in-process vLLM backend needs vllm (and a GPU): pip install 'tmas[vllm]'"
        ) from exc
    return vllm


class ChatVLLM(BaseChatModel):
    """A model run in-process by ``vllm.LLM``; concurrent calls share one batched call.

    ``_generate`` returns ``n`` generations (vLLM's ``n`` choices of one request). Per-call
    keyword arguments ``max_tokens``, ``temperature``, ``top_p``, ``seed`` and ``n`` override
    the fields. The engine is created by the batching thread on the first call.

    Example (on a machine with vLLM and a GPU)::

        chat = ChatVLLM(model="Qwen/Qwen3-8B", max_tokens=256, n=4)
        result = chat.generate([[("user", "1+1?")]])
        len(result.generations[0])  # 4
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str
    max_tokens: int = 512
    temperature: float = 0.7
    top_p: float = 0.95
    seed: int | None = None
    n: int = 1
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    max_model_len: int | None = None
    batch_window_ms: float = 5.0
    engine_kwargs: dict[str, Any] = Field(default_factory=dict)

    _llm: Any = PrivateAttr(default=None)
    _batcher: MicroBatcher | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "vllm"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "n": self.n,
        }

    def _engine(self) -> Any:
        """Create the ``vllm.LLM`` engine once (called from the batching thread)."""
        if self._llm is None:
            vllm = _import_vllm()
            kwargs: dict[str, Any] = {
                "model": self.model,
                "tensor_parallel_size": self.tensor_parallel_size,
                "gpu_memory_utilization": self.gpu_memory_utilization,
            }
            if self.max_model_len is not None:
                kwargs["max_model_len"] = self.max_model_len
            if self.seed is not None:
                kwargs["seed"] = self.seed
            kwargs.update(self.engine_kwargs)
            self._llm = vllm.LLM(**kwargs)
        return self._llm

    def _run_batch(
        self, conversations: list[list[dict[str, str]]], samplings: list[dict[str, Any]]
    ) -> list[Any]:
        llm = self._engine()
        vllm = _import_vllm()
        params = [vllm.SamplingParams(**s) for s in samplings]
        return list(llm.chat(conversations, sampling_params=params, use_tqdm=False))

    def _submit(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict) -> Future:
        with self._lock:
            if self._batcher is None:
                self._batcher = MicroBatcher(self._run_batch, self.batch_window_ms / 1000.0)
            batcher = self._batcher
        sampling = sampling_kwargs(
            max_tokens=kwargs.get("max_tokens", self.max_tokens),
            temperature=kwargs.get("temperature", self.temperature),
            top_p=kwargs.get("top_p", self.top_p),
            seed=kwargs.get("seed", self.seed),
            n=kwargs.get("n", self.n),
            stop=stop,
        )
        return batcher.submit(to_chat_dicts(messages), sampling)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        output = self._submit(messages, stop, kwargs).result()
        return to_chat_result(output, self.model)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        output = await asyncio.wrap_future(self._submit(messages, stop, kwargs))
        return to_chat_result(output, self.model)

    def close(self) -> None:
        """Stop the batching thread (the engine stays loaded until the model is dropped)."""
        with self._lock:
            batcher, self._batcher = self._batcher, None
        if batcher is not None:
            batcher.close()
