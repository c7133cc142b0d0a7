"""An embedded llama.cpp chat model for langchain-core, served by the batching engine."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

from tmas.llm.engine import EngineSettings, LlamaEngine, Outcome, Sampling, shared_engine
from tmas.llm.openai_wire import to_chat_dicts


class ChatLlamaCpp(BaseChatModel):
    """A GGUF model run in-process by llama.cpp, using the GGUF's own chat template.

    With ``engine="batched"`` (the default) every concurrent call of the process to the same
    model goes through one engine (``tmas.llm.engine``): up to ``max_sequences`` calls are
    decoded together, and a prompt that starts like one in the KV cache copies that prefix.
    ``engine="serial"`` serves one call at a time through llama-cpp-python's ``Llama``.
    Flash attention is on by default (measured faster here). With ``flash_attn=False`` and
    one KV stream per sequence (``kv_unified=False``, the default) a call's output does not
    depend on what else is batched with it or which prefix it copied: the same seed gave the
    same text token for token (on some CPUs, e.g. without AVX-512, batched logits still round
    differently and a long output can drift). Otherwise outputs can differ by the rounding of
    batched logits.
    Per-call keyword arguments ``max_tokens``, ``temperature``, ``top_p`` and ``seed``
    override the fields. When prompt plus ``max_tokens`` would overflow ``n_ctx``,
    ``max_tokens`` shrinks to fit; a prompt that alone does not fit raises
    ``ContextOverflowError`` (a ValueError).

    Example:
        >>> from tmas.llm.model_files import smollm2_path
        >>> model = ChatLlamaCpp(model_path=str(smollm2_path()), n_ctx=1024, max_tokens=16)
        >>> model.invoke("Say hi").usage_metadata["output_tokens"] > 0
        True
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: str
    n_ctx: int = 4096
    n_threads: int | None = None
    max_tokens: int = 512
    temperature: float = 0.7
    top_p: float = 0.95
    seed: int | None = None
    flash_attn: bool = True
    engine: Literal["batched", "serial"] = "batched"
    max_sequences: int = Field(default=8, ge=1, le=256)
    n_batch: int = Field(default=512, ge=16)
    kv_unified: bool = False
    verbose: bool = False

    _serial: Any = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "llamacpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_path": self.model_path,
            "n_ctx": self.n_ctx,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
        }

    @property
    def model_name(self) -> str:
        """The GGUF file name, reported as ``model_name`` in response metadata."""
        return Path(self.model_path).name

    def engine_settings(self) -> EngineSettings:
        """The settings of the shared engine this model's calls go through."""
        return EngineSettings(
            model_path=self.model_path,
            n_ctx=self.n_ctx,
            max_sequences=self.max_sequences,
            n_batch=self.n_batch,
            n_threads=self.n_threads,
            flash_attn="on" if self.flash_attn else "off",
            kv_unified=self.kv_unified,
        )

    def _server(self) -> LlamaEngine | Any:
        if self.engine == "batched":
            return shared_engine(self.engine_settings())
        if self._serial is None:
            from tmas.llm.llamacpp_serial import SerialLlama

            self._serial = SerialLlama(
                self.model_path,
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                flash_attn=self.flash_attn,
                verbose=self.verbose,
            )
        return self._serial

    def _call(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> dict[str, Any]:
        seed = kwargs.get("seed", self.seed)
        return {
            "chat": to_chat_dicts(messages),
            "max_tokens": int(kwargs.get("max_tokens", self.max_tokens)),
            "sampling": Sampling(
                temperature=float(kwargs.get("temperature", self.temperature)),
                top_p=float(kwargs.get("top_p", self.top_p)),
                seed=None if seed is None else int(seed),
            ),
        }

    def _message(self, outcome: Outcome) -> AIMessage:
        usage: dict[str, Any] = {
            "input_tokens": outcome.prompt_tokens,
            "output_tokens": outcome.output_tokens,
            "total_tokens": outcome.prompt_tokens + outcome.output_tokens,
        }
        if outcome.cached_tokens:
            usage["input_token_details"] = {"cache_read": outcome.cached_tokens}
        return AIMessage(
            content=outcome.text,
            usage_metadata=usage,
            response_metadata=self._metadata(outcome),
        )

    def _metadata(self, outcome: Outcome) -> dict[str, Any]:
        return {"finish_reason": outcome.finish_reason, "model_name": self.model_name}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        outcome = self._server().complete(**self._call(messages, kwargs), stops=stop)
        return ChatResult(generations=[ChatGeneration(message=self._message(outcome))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.engine != "batched":
            return await super()._agenerate(messages, stop, None, **kwargs)
        engine = await _aengine(self)
        outcome = await engine.acomplete(**self._call(messages, kwargs), stops=stop)
        return ChatResult(generations=[ChatGeneration(message=self._message(outcome))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for kind, value in self._server().stream(**self._call(messages, kwargs), stops=stop):
            chunk = self._chunk(kind, value)
            if kind == "text" and run_manager is not None:
                run_manager.on_llm_new_token(value, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        if self.engine != "batched":
            async for chunk in super()._astream(messages, stop, None, **kwargs):
                yield chunk
            return
        engine = await _aengine(self)
        async for kind, value in engine.astream(**self._call(messages, kwargs), stops=stop):
            chunk = self._chunk(kind, value)
            if kind == "text" and run_manager is not None:
                await run_manager.on_llm_new_token(value, chunk=chunk)
            yield chunk

    def _chunk(self, kind: str, value: Any) -> ChatGenerationChunk:
        if kind == "text":
            return ChatGenerationChunk(message=AIMessageChunk(content=value))
        message = self._message(value)
        return ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata=message.usage_metadata,
                response_metadata=message.response_metadata,
            )
        )


async def _aengine(model: ChatLlamaCpp) -> LlamaEngine:
    """The shared engine, loaded off the event loop (loading a model takes seconds)."""
    return await asyncio.get_running_loop().run_in_executor(None, model._server)
