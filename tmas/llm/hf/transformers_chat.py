"""A transformers model (with an optional LoRA adapter) as a langchain-core chat model."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import ConfigDict

from tmas.llm.chat_results import Choice, chat_result
from tmas.llm.hf.batching import batcher_for
from tmas.llm.hf.decoding import answer_of, chat_prompt_ids, eos_ids
from tmas.llm.hf.model_loading import LoadedModel, load_model
from tmas.llm.openai_wire import to_chat_dicts


def generate(
    loaded: LoadedModel,
    messages: list[dict[str, str]],
    *,
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: int | None,
    n: int,
    stop: Sequence[str] | None,
    max_batch: int = 1,
) -> tuple[int, list[Choice]]:
    """Prompt tokens and ``n`` sampled answers of ``messages`` (greedy at temperature 0), one
    call at a time per device (the lock makes the seed decide the sample). A single greedy
    answer is decoded together with up to ``max_batch - 1`` other waiting ones
    (:mod:`tmas.llm.hf.batching`).

    Example (with ``tmas[train]``)::

        tokens, choices = generate(load_model("smollm2"), [{"role": "user", "content": "Hi"}],
                                   max_tokens=8, temperature=0, top_p=1, seed=None, n=1, stop=None)
    """
    if temperature == 0 and n == 1 and max_batch > 1:
        batcher = batcher_for(loaded)
        prompt_tokens, choice = batcher.answer(messages, max_tokens, stop or (), max_batch)
        return prompt_tokens, [choice]
    import torch

    tokenizer = loaded.tokenizer
    sampling: dict[str, Any] = {"do_sample": temperature > 0}
    if temperature > 0:
        sampling.update(temperature=float(temperature), top_p=float(top_p), top_k=0)
    if stop:
        sampling.update(stop_strings=list(stop), tokenizer=tokenizer)
    ends = eos_ids(loaded)
    # One call at a time: the model, and the tokenizer (fast tokenizers are not re-entrant).
    with loaded.lock, torch.inference_mode(), seeded(seed, temperature, loaded.device):
        ids = chat_prompt_ids(tokenizer, messages)
        inputs = {
            "input_ids": torch.tensor([ids], device=loaded.device),
            "attention_mask": torch.ones(1, len(ids), dtype=torch.long, device=loaded.device),
        }
        output = loaded.model.generate(
            **inputs,
            max_new_tokens=int(max_tokens),
            num_return_sequences=int(n),
            pad_token_id=tokenizer.pad_token_id,
            **sampling,
        )
        rows = output[:, len(ids) :].tolist()
        choices = [answer_of(tokenizer, row, ends, stop or ()) for row in rows]
    return len(ids), choices


@contextlib.contextmanager
def seeded(seed: int | None, temperature: float, device: str) -> Iterator[None]:
    """Sample from ``seed`` without touching the process's own random state (a trainer in the
    same process keeps its draws); nothing to do for greedy decoding or no seed.

    Example:
        >>> with seeded(None, 0.7, "cpu"):
        ...     pass
    """
    if seed is None or temperature <= 0:
        yield
        return
    import torch

    devices = [torch.device(device).index or 0] if device.startswith("cuda") else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(int(seed))
        yield


class ChatHF(BaseChatModel):
    """A causal LM run in-process by transformers, with an optional LoRA adapter (PEFT).

    ``model`` is a checkpoint folder, a hub id, a ``.gguf`` file or a bundled name (``smollm2``,
    ``qwen``: converted once to a plain checkpoint); ``adapter`` a folder saved by
    ``tmas train grpo``. Every ChatHF of the process with the same model, adapter and device
    shares one loaded copy, and calls run one at a time per device; greedy calls waiting for
    it are decoded together, up to ``max_batch`` at once. Per-call keyword arguments
    ``max_tokens``, ``temperature``, ``top_p``, ``seed`` and ``n`` override the fields.

    Example (with ``tmas[train]``)::

        ChatHF(model="smollm2", max_tokens=16).invoke("1+1?").content
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str
    adapter: str | None = None
    device: str | None = None
    max_tokens: int = 512
    temperature: float = 0.7
    top_p: float = 0.95
    seed: int | None = None
    n: int = 1
    max_batch: int = 1

    @property
    def _llm_type(self) -> str:
        return "hf"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "adapter": self.adapter, "max_tokens": self.max_tokens}

    @property
    def loaded(self) -> LoadedModel:
        """The model and tokenizer serving this chat model (loaded on first use)."""
        return load_model(self.model, self.adapter, self.device)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt_tokens, choices = generate(
            self.loaded,
            to_chat_dicts(messages),
            max_tokens=kwargs.get("max_tokens", self.max_tokens),
            temperature=kwargs.get("temperature", self.temperature),
            top_p=kwargs.get("top_p", self.top_p),
            seed=kwargs.get("seed", self.seed),
            n=kwargs.get("n", self.n),
            max_batch=self.max_batch,
            stop=stop or kwargs.get("stop"),
        )
        return chat_result(prompt_tokens, choices, self.model)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return await asyncio.to_thread(self._generate, messages, stop, None, **kwargs)
