"""Greedy calls to an in-process model are decoded together: the calls that wait while the
device is busy join one batch when they share a budget and stop strings, up to ``max_batch``;
a failed decode reaches every caller of its batch (the decoding itself is faked here; the real
model is in ``test_hf_batching_real``)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

import pytest

from tmas.llm.chat_results import Choice
from tmas.llm.hf import batching
from tmas.llm.hf.batching import GreedyBatcher


class Decoder:
    """Stands in for ``decode_greedy``: records each batch's prompts, answers with them."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.fail_on = fail_on

    def __call__(self, loaded: Any, batch: list[batching.GreedyCall]) -> list[tuple[int, Choice]]:
        prompts = [call.messages[0]["content"] for call in batch]
        self.batches.append(prompts)
        if self.fail_on in prompts:
            raise RuntimeError("out of memory")
        return [(len(p), Choice(p.upper(), call.max_tokens, "length"))
                for p, call in zip(prompts, batch, strict=True)]  # fmt: skip


def ask(batcher: GreedyBatcher, prompt: str, max_tokens: int = 8, max_batch: int = 8) -> Any:
    return batcher.answer([{"role": "user", "content": prompt}], max_tokens, (), max_batch)


def calls_while_busy(
    decoder: Decoder, monkeypatch: pytest.MonkeyPatch, calls: list[tuple[str, int, int]]
) -> tuple[list[Any], GreedyBatcher]:
    """Make ``calls`` (prompt, budget, max_batch) from threads while the device is held, then
    free it; each call's answer or raised error, and the batcher."""
    monkeypatch.setattr(batching, "decode_greedy", decoder)
    lock = threading.Lock()
    batcher = GreedyBatcher(SimpleNamespace(lock=lock))  # type: ignore[arg-type]
    lock.acquire()
    with ThreadPoolExecutor(len(calls)) as pool:
        futures = [pool.submit(ask, batcher, p, t, b) for p, t, b in calls]
        while len(batcher._waiting) < len(calls):
            threading.Event().wait(0.01)
        lock.release()
        results = []
        for future in futures:
            try:
                results.append(future.result(timeout=10))
            except RuntimeError as exc:
                results.append(exc)
    return results, batcher


def test_calls_waiting_for_the_device_are_decoded_in_one_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decoder = Decoder()
    results, _ = calls_while_busy(decoder, monkeypatch, [(p, 8, 8) for p in "abcd"])
    assert sorted(map(sorted, decoder.batches)) == [["a", "b", "c", "d"]]
    assert results == [(1, Choice(p.upper(), 8, "length")) for p in "abcd"]


def test_a_batch_shares_its_budget_and_stops_at_max_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    decoder = Decoder()
    calls = [("a", 8, 2), ("b", 16, 2), ("c", 8, 2), ("d", 8, 2), ("e", 16, 2)]
    results, _ = calls_while_busy(decoder, monkeypatch, calls)
    assert sorted(len(b) for b in decoder.batches) == [1, 2, 2]
    by_prompt = {p: next(b for b in decoder.batches if p in b) for p, _, _ in calls}
    assert by_prompt["b"] == by_prompt["e"]  # the two 16-token calls went together
    assert all(len(set(b) & {"b", "e"}) in (0, len(b)) for b in decoder.batches)
    assert [r[1].tokens for r in results] == [8, 16, 8, 8, 16]


def test_a_failed_decode_reaches_every_caller_of_its_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decoder = Decoder(fail_on="b")
    calls = [("a", 8, 8), ("b", 8, 8), ("c", 4, 8)]
    results, batcher = calls_while_busy(decoder, monkeypatch, calls)
    assert [type(r) for r in results[:2]] == [RuntimeError, RuntimeError]
    assert "out of memory" in str(results[0])
    assert results[2] == (1, Choice("C", 4, "length"))  # another batch, unharmed
    assert ask(batcher, "later") == (5, Choice("LATER", 8, "length"))  # it still answers
