"""Greedy calls to one in-process model decoded together.

A CPU or GPU spends about as long on one step of eight sequences as on one step of one, so
calls that wait for the model are better answered as a batch. A worker thread per model
gathers waiting greedy calls (until ``max_batch`` wait or none came for ``GATHER_S``), takes
every one with the same budget and stop strings as the oldest (up to its ``max_batch``) once
the device's lock is free, and decodes them in one ``generate``: prompts padded on the left,
each answer cut at its own end token. Sampled calls are not batched: one
call at a time keeps a seed deciding its sample.

Batched greedy answers are the unbatched ones up to floating-point rounding: the same prompt
in another batch may, rarely, pick another token where two are almost tied (as in any
batching server).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from tmas.llm.chat_results import Choice
from tmas.llm.hf.model_loading import LoadedModel


@dataclass
class GreedyCall:
    """One greedy call waiting for its batch: a chat, a token budget and stop strings."""

    messages: list[dict[str, str]]
    max_tokens: int
    stop: tuple[str, ...]
    max_batch: int
    answer: Future = field(default_factory=Future)

    @property
    def key(self) -> tuple[int, tuple[str, ...]]:
        """What calls decoded together must share.

        Example:
            >>> GreedyCall([], 64, ("END",), 8).key
            (64, ('END',))
        """
        return self.max_tokens, self.stop


def left_padded(
    prompts: Sequence[Sequence[int]], pad_id: int
) -> tuple[list[list[int]], list[list[int]]]:
    """Token ids padded on the left to one length, and their attention masks.

    Example:
        >>> left_padded([[5, 6, 7], [8]], 0)
        ([[5, 6, 7], [0, 0, 8]], [[1, 1, 1], [0, 0, 1]])
    """
    width = max(len(ids) for ids in prompts)
    ids = [[pad_id] * (width - len(p)) + list(p) for p in prompts]
    masks = [[0] * (width - len(p)) + [1] * len(p) for p in prompts]
    return ids, masks


def next_batch(waiting: list[GreedyCall]) -> list[GreedyCall]:
    """Take the calls to decode together from ``waiting``: the oldest call and the next ones
    sharing its budget and stop strings, at most the oldest call's ``max_batch``.

    Example:
        >>> calls = [GreedyCall([], 8, (), 2), GreedyCall([], 9, (), 2), GreedyCall([], 8, (), 2),
        ...          GreedyCall([], 8, (), 2)]
        >>> batch = next_batch(calls)
        >>> [c.max_tokens for c in batch], [c.max_tokens for c in calls]
        ([8, 8], [9, 8])
    """
    first = waiting[0]
    batch = [c for c in waiting if c.key == first.key][: first.max_batch]
    for call in batch:
        waiting.remove(call)
    return batch


GATHER_S = 0.05
"""How long the worker waits for one more call before it decodes fewer than ``max_batch``
(callers answered by one batch send their next calls within milliseconds of each other;
without the wait the batches alternate between one call and the rest)."""


class GreedyBatcher:
    """The worker that decodes a model's waiting greedy calls together.

    Example (with ``tmas[train]``)::

        batcher = batcher_for(load_model("smollm2"))
        prompt_tokens, choice = batcher.answer([{"role": "user", "content": "1+1?"}], 16, (), 8)
    """

    def __init__(self, loaded: LoadedModel) -> None:
        self.loaded = loaded
        self._waiting: list[GreedyCall] = []
        self._ready = threading.Condition()
        self._worker = threading.Thread(target=self._work, name="tmas-hf-batcher", daemon=True)
        self._worker.start()

    def answer(
        self, messages: list[dict[str, str]], max_tokens: int, stop: Sequence[str], max_batch: int
    ) -> tuple[int, Choice]:
        """Prompt tokens and the greedy answer of ``messages``, decoded with other waiting
        calls (raises what decoding raised)."""
        call = GreedyCall(messages, int(max_tokens), tuple(stop), max(1, int(max_batch)))
        with self._ready:
            self._waiting.append(call)
            self._ready.notify()
        return call.answer.result()

    def _gather(self) -> None:
        """Wait for a call, then for more until ``max_batch`` wait or none came for a while."""
        with self._ready:
            while not self._waiting:
                self._ready.wait()
            while len(self._waiting) < self._waiting[0].max_batch:
                count = len(self._waiting)
                self._ready.wait(GATHER_S)
                if len(self._waiting) == count:
                    return

    def _work(self) -> None:
        while True:
            self._gather()
            with self.loaded.lock:  # calls that come while another batch runs join this one
                with self._ready:
                    batch = next_batch(self._waiting)
                try:
                    results = decode_greedy(self.loaded, batch)
                except BaseException as exc:  # every caller of the batch hears of it
                    for call in batch:
                        call.answer.set_exception(exc)
                    continue
            for call, result in zip(batch, results, strict=True):
                call.answer.set_result(result)


_batchers: dict[int, GreedyBatcher] = {}
_batchers_lock = threading.Lock()


def batcher_for(loaded: LoadedModel) -> GreedyBatcher:
    """The process's batcher of ``loaded`` (started on first use)."""
    with _batchers_lock:
        if id(loaded) not in _batchers:
            _batchers[id(loaded)] = GreedyBatcher(loaded)
        return _batchers[id(loaded)]


def decode_greedy(loaded: LoadedModel, batch: list[GreedyCall]) -> list[tuple[int, Choice]]:
    """Prompt tokens and greedy answer of each call of ``batch``, decoded in one ``generate``
    (call it holding the model's lock)."""
    import torch

    from tmas.llm.hf.decoding import answer_of, chat_prompt_ids, eos_ids

    tokenizer = loaded.tokenizer
    first = batch[0]
    prompts = [chat_prompt_ids(tokenizer, call.messages) for call in batch]
    ids, masks = left_padded(prompts, tokenizer.pad_token_id)
    options: dict[str, Any] = {}
    if first.stop:
        options.update(stop_strings=list(first.stop), tokenizer=tokenizer)
    with torch.inference_mode():
        output = loaded.model.generate(
            input_ids=torch.tensor(ids, device=loaded.device),
            attention_mask=torch.tensor(masks, device=loaded.device),
            max_new_tokens=first.max_tokens,
            do_sample=False,
            pad_token_id=tokenizer.pad_token_id,
            **options,
        )
    ends = eos_ids(loaded)
    width = len(ids[0])
    rows = output[:, width:].tolist()
    return [
        (len(prompt), answer_of(tokenizer, row, ends, first.stop))
        for prompt, row in zip(prompts, rows, strict=True)
    ]
