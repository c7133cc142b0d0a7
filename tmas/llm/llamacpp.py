"""An embedded llama.cpp chat model (``llama_cpp.Llama`` in-process) for langchain-core."""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, PrivateAttr

from tmas.llm.errors import ContextOverflowError
from tmas.llm.prefix_gate import PrefixAffinityLock

_ROLE_OF_TYPE = {"system": "system", "human": "user", "ai": "assistant"}


def to_chat_dicts(messages: list[BaseMessage]) -> list[dict[str, str]]:
    """Map langchain messages to OpenAI-style chat dicts (system / user / assistant).

    Messages of other types (tool, function, chat) are sent as ``user`` turns.

    Example:
        >>> from langchain_core.messages import HumanMessage, SystemMessage
        >>> to_chat_dicts([SystemMessage("be brief"), HumanMessage("hi")])
        [{'role': 'system', 'content': 'be brief'}, {'role': 'user', 'content': 'hi'}]
    """
    return [{"role": _ROLE_OF_TYPE.get(m.type, "user"), "content": m.text} for m in messages]


def _import_llama() -> Any:
    try:
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the embedded llama.cpp backend needs llama-cpp-python: pip install 'tmas[local]'"
        ) from exc
    return Llama


def _prompt_key(messages: list[BaseMessage]) -> str:
    return "\x00".join(f"{m.type}:{m.content}" for m in messages)


class ChatLlamaCpp(BaseChatModel):
    """A GGUF model run in-process by llama.cpp, using the GGUF's own chat template.

    The model is loaded on the first call. Calls are serialised, because one llama.cpp
    context is not thread-safe and graphs call models from several threads; the waiting call
    whose prompt shares the most prefix with the last one goes next (``PrefixAffinityLock``),
    so llama.cpp re-evaluates only the part of its prompt that differs.
    Per-call keyword arguments ``max_tokens``, ``temperature`` and ``seed`` override the
    fields. When prompt plus ``max_tokens`` would overflow ``n_ctx``, ``max_tokens`` shrinks
    to fit; a prompt that alone does not fit raises ``ContextOverflowError`` (a ValueError).

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
    verbose: bool = False

    _llama: Any = PrivateAttr(default=None)
    _gate: PrefixAffinityLock = PrivateAttr(default_factory=PrefixAffinityLock)

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

    def _load(self) -> Any:
        """Create the ``Llama`` object; the caller holds the lock."""
        if self._llama is None:
            llama_cls = _import_llama()
            kwargs: dict[str, Any] = {
                "model_path": self.model_path,
                "n_ctx": self.n_ctx,
                "n_threads": self.n_threads or os.cpu_count() or 1,
                "verbose": self.verbose,
            }
            if self.seed is not None:
                kwargs["seed"] = self.seed
            if "flash_attn" in inspect.signature(llama_cls.__init__).parameters:
                kwargs["flash_attn"] = self.flash_attn
            self._llama = llama_cls(**kwargs)
        return self._llama

    def _count_prompt_tokens(self, llama: Any, chat: list[dict[str, str]]) -> int:
        """Count the tokens of the chat as the GGUF template formats it."""
        template = getattr(llama, "metadata", {}).get("tokenizer.chat_template")
        if template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            def token_text(token: int) -> str:
                return llama._model.token_get_text(token) if token != -1 else ""

            formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=token_text(llama.token_eos()),
                bos_token=token_text(llama.token_bos()),
            )
            try:
                prompt = formatter(messages=chat).prompt
                return len(llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))
            except Exception:  # noqa: BLE001 - fall back to a plain count below
                pass
        text = "\n".join(f"{m['role']}: {m['content']}" for m in chat)
        return len(llama.tokenize(text.encode("utf-8"), add_bos=True)) + 4 * len(chat)

    def _request(
        self, llama: Any, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict
    ) -> dict[str, Any]:
        """Build ``create_chat_completion`` arguments, fitting max_tokens into the context."""
        chat = to_chat_dicts(messages)
        max_tokens = int(kwargs.get("max_tokens", self.max_tokens))
        n_ctx = llama.n_ctx()
        prompt_tokens = self._count_prompt_tokens(llama, chat)
        if prompt_tokens >= n_ctx:
            raise ContextOverflowError(
                f"prompt too long for the context window: {prompt_tokens} prompt tokens, "
                f"n_ctx={n_ctx}; shorten the prompt or raise n_ctx"
            )
        max_tokens = max(1, min(max_tokens, n_ctx - prompt_tokens))
        seed = kwargs.get("seed", self.seed)
        request: dict[str, Any] = {
            "messages": chat,
            "max_tokens": max_tokens,
            "temperature": float(kwargs.get("temperature", self.temperature)),
            "top_p": float(kwargs.get("top_p", self.top_p)),
            "stop": list(stop) if stop else None,
        }
        if seed is not None:
            request["seed"] = int(seed)
        return request

    @staticmethod
    def _overflow(exc: ValueError) -> ValueError:
        return ContextOverflowError(
            f"prompt too long for the context window ({exc}); shorten the prompt or raise n_ctx"
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._gate.hold(_prompt_key(messages)):
            llama = self._load()
            request = self._request(llama, messages, stop, kwargs)
            try:
                response = llama.create_chat_completion(**request)
            except ValueError as exc:
                if "context window" in str(exc):
                    raise self._overflow(exc) from exc
                raise
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        input_tokens = int(usage.get("prompt_tokens", 0))
        output_tokens = int(usage.get("completion_tokens", 0))
        message = AIMessage(
            content=choice["message"].get("content") or "",
            usage_metadata={
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            },
            response_metadata={
                "finish_reason": choice.get("finish_reason"),
                "model_name": self.model_name,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        with self._gate.hold(_prompt_key(messages)):
            llama = self._load()
            request = self._request(llama, messages, stop, kwargs)
            try:
                stream = llama.create_chat_completion(**request, stream=True)
                finish_reason = None
                for part in stream:
                    choice = part["choices"][0]
                    text = choice.get("delta", {}).get("content") or ""
                    finish_reason = choice.get("finish_reason") or finish_reason
                    if not text:
                        continue
                    chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
                    if run_manager is not None:
                        run_manager.on_llm_new_token(text, chunk=chunk)
                    yield chunk
            except ValueError as exc:
                if "context window" in str(exc):
                    raise self._overflow(exc) from exc
                raise
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                response_metadata={"finish_reason": finish_reason, "model_name": self.model_name},
            )
        )
