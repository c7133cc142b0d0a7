"""The one-at-a-time path: llama-cpp-python's high-level ``Llama``, one call at a time.

Kept for comparison with the batching engine (``ChatLlamaCpp(engine="serial")``). Calls are
serialised, because one ``Llama`` is not thread-safe; the waiting call whose prompt shares
the most prefix with the last one goes next (``PrefixAffinityLock``), so llama.cpp
re-evaluates only the part of its prompt that differs.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tmas.llm.engine.cpu_build import rebuild_hint, system_info, uses_amx
from tmas.llm.engine.request import Outcome, Sampling
from tmas.llm.errors import ContextOverflowError, ModelCallError
from tmas.llm.prefix_gate import PrefixAffinityLock

Event = tuple[str, Any]


def _import_llama() -> Any:
    try:
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the serial llama.cpp path needs llama-cpp-python: pip install llama-cpp-python"
        ) from exc
    return Llama


def refuse_amx_build() -> None:
    """Refuse a llama.cpp build that multiplies with AMX: ``Llama`` loads weights with the
    extra buffer types that crash there (:mod:`tmas.llm.engine.cpu_build`), and has no
    option to leave them out; the batching engine does. The error is fatal: the run stops
    at its first call, its checkpoint intact, and says how to rebuild.

    Example:
        >>> refuse_amx_build()  # a build without AMX passes
    """
    import llama_cpp

    if uses_amx(system_info(llama_cpp)):
        raise ModelCallError(
            "this llama.cpp build uses AMX, whose matrix multiply crashes "
            "(ggml-org/llama.cpp#20824): use the batching engine (the default), or "
            + rebuild_hint(),
            fatal="this llama.cpp build crashes in its AMX matrix multiply",
        )


@contextmanager
def _context_errors() -> Iterator[None]:
    """llama-cpp-python's own context-window ValueError, as a ``ContextOverflowError``."""
    try:
        yield
    except ValueError as exc:
        if "context window" not in str(exc):
            raise
        raise ContextOverflowError(
            f"prompt too long for the context window ({exc}); shorten the prompt or raise n_ctx"
        ) from exc


def _prompt_key(chat: list[dict[str, str]]) -> str:
    return "\x00".join(f"{m['role']}:{m['content']}" for m in chat)


class SerialLlama:
    """One ``llama_cpp.Llama``, loaded on the first call, serving one call at a time.

    Example:
        >>> from tmas.llm.model_files import smollm2_path
        >>> serial = SerialLlama(str(smollm2_path()), n_ctx=512)
        >>> chat = [{"role": "user", "content": "Say hi"}]
        >>> serial.complete(chat, max_tokens=4, sampling=Sampling(0.0)).output_tokens
        4
    """

    def __init__(
        self,
        model_path: str,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        flash_attn: bool = True,
        verbose: bool = False,
    ) -> None:
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.flash_attn = flash_attn
        self.verbose = verbose
        self._llama: Any = None
        self._gate = PrefixAffinityLock()

    def _load(self) -> Any:
        """Create the ``Llama`` object; the caller holds the gate."""
        if self._llama is None:
            llama_cls = _import_llama()
            refuse_amx_build()
            kwargs: dict[str, Any] = {
                "model_path": self.model_path,
                "n_ctx": self.n_ctx,
                "n_threads": self.n_threads or os.cpu_count() or 1,
                "verbose": self.verbose,
            }
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
        self,
        llama: Any,
        chat: list[dict[str, str]],
        max_tokens: int,
        sampling: Sampling,
        stops: list[str] | None,
    ) -> tuple[dict[str, Any], int]:
        """``create_chat_completion`` arguments, max_tokens fitted into the context, and the
        prompt's token count."""
        n_ctx = llama.n_ctx()
        prompt_tokens = self._count_prompt_tokens(llama, chat)
        if prompt_tokens >= n_ctx:
            raise ContextOverflowError(
                f"prompt too long for the context window: {prompt_tokens} prompt tokens, "
                f"n_ctx={n_ctx}; shorten the prompt or raise n_ctx"
            )
        request: dict[str, Any] = {
            "messages": chat,
            "max_tokens": max(1, min(max_tokens, n_ctx - prompt_tokens)),
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": sampling.top_k,
            "min_p": sampling.min_p,
            "stop": list(stops) if stops else None,
        }
        if sampling.seed is not None:
            request["seed"] = sampling.seed
        return request, prompt_tokens

    def stream(
        self,
        chat: list[dict[str, str]],
        *,
        max_tokens: int,
        sampling: Sampling,
        stops: list[str] | None = None,
    ) -> Iterator[Event]:
        """``("text", str)`` events, then one ``("done", Outcome)``. llama-cpp-python's stream
        carries no usage, so the answer's tokens are counted by tokenising its text again."""
        with self._gate.hold(_prompt_key(chat)):
            llama = self._load()
            request, prompt_tokens = self._request(llama, chat, max_tokens, sampling, stops)
            text, finish_reason, usage = [], None, {}
            with _context_errors():
                for part in llama.create_chat_completion(**request, stream=True):
                    choice = part["choices"][0]
                    piece = choice.get("delta", {}).get("content") or ""
                    finish_reason = choice.get("finish_reason") or finish_reason
                    usage = part.get("usage") or usage
                    if piece:
                        text.append(piece)
                        yield "text", piece
            output = len(llama.tokenize("".join(text).encode("utf-8"), add_bos=False))
        yield (
            "done",
            Outcome(
                text="".join(text),
                finish_reason=finish_reason or "stop",
                prompt_tokens=int(usage.get("prompt_tokens", prompt_tokens)),
                output_tokens=int(usage.get("completion_tokens", output)),
                cached_tokens=0,
            ),
        )

    def complete(
        self,
        chat: list[dict[str, str]],
        *,
        max_tokens: int,
        sampling: Sampling,
        stops: list[str] | None = None,
    ) -> Outcome:
        """The finished call's outcome."""
        with self._gate.hold(_prompt_key(chat)):
            llama = self._load()
            request, _ = self._request(llama, chat, max_tokens, sampling, stops)
            with _context_errors():
                response = llama.create_chat_completion(**request)
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        return Outcome(
            text=choice["message"].get("content") or "",
            finish_reason=choice.get("finish_reason") or "stop",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", 0)),
            cached_tokens=0,
        )
