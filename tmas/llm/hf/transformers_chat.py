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
from tmas.llm.hf.model_loading import LoadedModel, load_model
from tmas.llm.openai_wire import to_chat_dicts


def cut_at_stop(text: str, stop: Sequence[str] | None) -> tuple[str, bool]:
    """``text`` up to the first stop string, and whether one was found.

    Example:
        >>> cut_at_stop("x = 3\\nEND more", ["END"])
        ('x = 3\\n', True)
    """
    cut = min((text.find(s) for s in stop or () if s and s in text), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def generated_length(ids: Sequence[int], eos_ids: set[int]) -> tuple[int, bool]:
    """How many of ``ids`` were generated (through the first end token, padding after it left
    out), and whether an end token was reached.

    Example:
        >>> generated_length([5, 6, 2, 2, 2], {2})
        (3, True)
    """
    for position, token in enumerate(ids):
        if token in eos_ids:
            return position + 1, True
    return len(ids), False


def chat_prompt_ids(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
    """The token ids of a chat as the model's template writes it, ready for its answer (call
    it holding the model's lock: fast tokenizers are not re-entrant).

    Example (with ``tmas[train]``)::

        ids = chat_prompt_ids(loaded.tokenizer, [{"role": "user", "content": "Hi"}])
    """
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def eos_ids(loaded: LoadedModel) -> set[int]:
    """The tokens that end an answer: the generation config's and the tokenizer's.

    Example (with ``tmas[train]``)::

        eos_ids(load_model("smollm2"))  # {2}
    """
    eos = loaded.model.generation_config.eos_token_id
    ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    if loaded.tokenizer.eos_token_id is not None:
        ids.add(loaded.tokenizer.eos_token_id)
    return {int(i) for i in ids}


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
) -> tuple[int, list[Choice]]:
    """Prompt tokens and ``n`` sampled answers of ``messages`` (greedy at temperature 0), one
    call at a time per model (the lock makes the seed decide the sample).

    Example (with ``tmas[train]``)::

        tokens, choices = generate(load_model("smollm2"), [{"role": "user", "content": "Hi"}],
                                   max_tokens=8, temperature=0, top_p=1, seed=None, n=1, stop=None)
    """
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
        prompt_tokens = len(ids)
        output = loaded.model.generate(
            **inputs,
            max_new_tokens=int(max_tokens),
            num_return_sequences=int(n),
            pad_token_id=tokenizer.pad_token_id,
            **sampling,
        )
        choices = []
        for row in output[:, prompt_tokens:].tolist():
            length, ended = generated_length(row, ends)
            answer, stopped = cut_at_stop(
                tokenizer.decode(row[:length], skip_special_tokens=True), stop
            )
            reason = "stop" if ended or stopped else "length"
            choices.append(Choice(answer, length, reason))
    return prompt_tokens, choices


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
    shares one loaded copy, and its calls run one at a time. Per-call keyword arguments
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
