"""A GGUF model and its llama.cpp context, loaded once: tokens in, pieces out, chat rendered."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tmas.llm.engine.binding import LlamaBinding, load_binding
from tmas.llm.engine.chat_template import ChatRenderer
from tmas.llm.engine.cpu_build import extra_buffers_for, system_info

_FLASH_ATTN = {"auto": -1, "off": 0, "on": 1}


@dataclass(frozen=True)
class EngineSettings:
    """How one model is loaded and served.

    ``n_ctx`` is each request's context window (prompt plus answer). ``max_sequences``
    requests are decoded together. With ``kv_unified`` off (the default) every sequence has
    its own ``n_ctx`` cells of KV cache; on, all share ``kv_cells`` cells (default
    ``n_ctx * max_sequences``) and attention runs over the cells in use by all of them.
    ``prefix_cache`` off computes every prompt in full (for comparison).

    Example:
        >>> EngineSettings(model_path="m.gguf").total_cells()
        32768
    """

    model_path: str
    n_ctx: int = 4096
    max_sequences: int = 8
    n_batch: int = 512
    n_threads: int | None = None
    flash_attn: Literal["auto", "on", "off"] = "on"
    kv_unified: bool = False
    kv_cells: int | None = None
    prefix_cache: bool = True
    extra_buffers: bool | None = None
    """llama.cpp's extra buffer types (weight repacking); None: on unless the build uses AMX
    (:mod:`tmas.llm.engine.cpu_build`)."""

    def __post_init__(self) -> None:
        if self.kv_cells is not None and self.kv_cells < self.n_ctx:
            raise ValueError(f"kv_cells ({self.kv_cells}) must hold one request: at least n_ctx")
        if self.max_sequences < 1:
            raise ValueError("max_sequences must be at least 1")
        if self.n_batch < self.max_sequences:
            raise ValueError(
                f"n_batch ({self.n_batch}) must hold one token of each of the "
                f"{self.max_sequences} sequences"
            )

    def total_cells(self) -> int:
        """The KV cells of the context: per sequence times sequences, unless set."""
        if self.kv_unified and self.kv_cells:
            return self.kv_cells
        return self.n_ctx * self.max_sequences

    def threads(self) -> int:
        """The decode threads: as set, else every core."""
        return self.n_threads or os.cpu_count() or 1


class LoadedModel:
    """The model, its vocabulary and one context with ``max_sequences`` sequences.

    Not thread-safe for decoding (the engine's thread owns ``ctx``); tokenising and
    rendering only read the vocabulary and may run in any thread.

    Example:
        >>> from tmas.llm.model_files import smollm2_path
        >>> model = LoadedModel(EngineSettings(str(smollm2_path()), n_ctx=512, max_sequences=2))
        >>> model.detokenize(model.tokenize("Hello world"))
        'Hello world'
        >>> model.close()
    """

    def __init__(self, settings: EngineSettings) -> None:
        path = Path(settings.model_path)
        if not path.is_file():
            raise FileNotFoundError(f"model file not found: {path}")
        self.settings = settings
        self.binding: LlamaBinding = load_binding()
        lib = self.lib = self.binding.lib
        model_params = lib.llama_model_default_params()
        model_params.use_extra_bufts = extra_buffers_for(system_info(lib), settings.extra_buffers)
        self.model = lib.llama_model_load_from_file(str(path).encode(), model_params)
        if not self.model:
            raise ValueError(f"llama.cpp could not load {path} (not a GGUF model?)")
        self.vocab = lib.llama_model_get_vocab(self.model)
        self.n_ctx_train = int(lib.llama_model_n_ctx_train(self.model))
        self.ctx = self._new_context(settings)
        self.memory = lib.llama_get_memory(self.ctx)
        self.renderer = ChatRenderer(
            self.binding.c_string(lib.llama_model_chat_template(self.model, self.binding.null)),
            bos=self._special_text(lib.llama_vocab_bos(self.vocab)),
            eos=self._special_text(lib.llama_vocab_eos(self.vocab)),
        )
        self._adds_bos = bool(lib.llama_vocab_get_add_bos(self.vocab))

    def _new_context(self, settings: EngineSettings) -> Any:
        params = self.lib.llama_context_default_params()
        params.n_ctx = settings.total_cells()
        params.n_batch = settings.n_batch
        params.n_ubatch = settings.n_batch
        params.n_seq_max = settings.max_sequences
        params.n_threads = settings.threads()
        params.n_threads_batch = settings.threads()
        params.flash_attn_type = _FLASH_ATTN[settings.flash_attn]
        params.kv_unified = settings.kv_unified
        params.no_perf = True
        ctx = self.lib.llama_init_from_model(self.model, params)
        if not ctx:
            self.lib.llama_model_free(self.model)
            raise MemoryError(
                f"llama.cpp could not create a context of {settings.total_cells()} cells for "
                f"{settings.max_sequences} sequences; lower n_ctx or max_sequences"
            )
        return ctx

    def _special_text(self, token: int) -> str:
        if token < 0:
            return ""
        return self.piece(token, special=True).decode("utf-8", errors="replace")

    def tokenize(self, text: str, *, add_special: bool = False) -> list[int]:
        """The tokens of ``text``, special tokens (``<|im_start|>``) parsed as such."""
        data = text.encode("utf-8")
        room = len(data) + 8
        for _ in range(2):
            out = self.binding.token_room(room)
            count = self.lib.llama_tokenize(
                self.vocab, data, len(data), out, room, add_special, True
            )
            if count >= 0:
                return [int(out[i]) for i in range(count)]
            room = -count
        raise ValueError("llama.cpp could not tokenise the prompt")

    def prompt_tokens(self, messages: list[dict[str, str]]) -> list[int]:
        """The tokens of a chat, formatted by the model's own chat template."""
        text = self.renderer.render(messages)
        add_bos = self._adds_bos and not (self.renderer.bos and text.startswith(self.renderer.bos))
        return self.tokenize(text, add_special=add_bos)

    def piece(self, token: int, *, special: bool = False) -> bytes:
        """The bytes one token stands for (control tokens are empty unless ``special``)."""
        room = 64
        for _ in range(2):
            buffer = self.binding.char_buffer(room)
            count = self.lib.llama_token_to_piece(self.vocab, token, buffer, room, 0, special)
            if count >= 0:
                return self.binding.read_bytes(buffer, count)
            room = -count
        return b""

    def detokenize(self, tokens: list[int]) -> str:
        """The text of ``tokens`` (for tests and diagnostics)."""
        return b"".join(self.piece(t) for t in tokens).decode("utf-8", errors="replace")

    def is_end(self, token: int) -> bool:
        """Whether ``token`` ends generation (end of turn, end of text)."""
        return bool(self.lib.llama_vocab_is_eog(self.vocab, token))

    def close(self) -> None:
        """Free the context and the model."""
        if getattr(self, "ctx", None):
            self.lib.llama_free(self.ctx)
            self.ctx = None
        if getattr(self, "model", None):
            self.lib.llama_model_free(self.model)
            self.model = None
