"""Tests for the in-process vLLM backend against a fake ``vllm`` module (no GPU needed)."""

from __future__ import annotations

import sys
import threading
import types
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from tmas.llm.vllm_local import (
    ChatVLLM,
    MicroBatcher,
    sampling_kwargs,
    to_chat_dicts,
    to_chat_result,
)


class FakeSamplingParams:
    def __init__(self, **kwargs: object) -> None:
        self.kwargs = kwargs


class FakeLLM:
    instances: list[FakeLLM] = []

    def __init__(self, **kwargs: object) -> None:
        self.init_kwargs = kwargs
        self.chat_calls: list[tuple[list, list]] = []
        FakeLLM.instances.append(self)

    def chat(self, conversations, sampling_params=None, use_tqdm=True):
        self.chat_calls.append((conversations, sampling_params))
        outputs = []
        for conv, params in zip(conversations, sampling_params, strict=True):
            n = params.kwargs["n"]
            prompt = conv[-1]["content"]
            choices = [
                SimpleNamespace(
                    text=f"{prompt}#{i}", token_ids=list(range(i + 2)), finish_reason="stop"
                )
                for i in range(n)
            ]
            outputs.append(SimpleNamespace(prompt_token_ids=[1] * len(conv) * 3, outputs=choices))
        return outputs


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("vllm")
    module.LLM = FakeLLM
    module.SamplingParams = FakeSamplingParams
    FakeLLM.instances = []
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


def test_message_mapping() -> None:
    chat = to_chat_dicts([SystemMessage("sys"), HumanMessage("q"), AIMessage("a")])
    assert chat == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
    ]


def test_sampling_kwargs() -> None:
    assert sampling_kwargs(32, 0.5, 0.9, 11, 3, ["</s>"]) == {
        "n": 3,
        "max_tokens": 32,
        "temperature": 0.5,
        "top_p": 0.9,
        "seed": 11,
        "stop": ["</s>"],
    }
    assert "seed" not in sampling_kwargs(32, 0.5, 0.9, None, 1, None)
    assert "stop" not in sampling_kwargs(32, 0.5, 0.9, None, 1, [])


def test_output_conversion_counts_tokens() -> None:
    output = SimpleNamespace(
        prompt_token_ids=[1, 2, 3, 4],
        outputs=[
            SimpleNamespace(text="a", token_ids=[9, 9], finish_reason="stop"),
            SimpleNamespace(text="b", token_ids=[9, 9, 9], finish_reason="length"),
        ],
    )
    result = to_chat_result(output, "m")
    assert [g.message.text for g in result.generations] == ["a", "b"]
    first, second = (g.message for g in result.generations)
    assert first.usage_metadata == {"input_tokens": 4, "output_tokens": 2, "total_tokens": 6}
    assert second.usage_metadata == {"input_tokens": 0, "output_tokens": 3, "total_tokens": 3}
    assert second.response_metadata == {"finish_reason": "length", "model_name": "m"}
    assert result.llm_output["token_usage"] == {
        "prompt_tokens": 4,
        "completion_tokens": 5,
        "total_tokens": 9,
    }


def test_generate_returns_n_generations(fake_vllm: types.ModuleType) -> None:
    model = ChatVLLM(model="fake/model", n=3, seed=5, max_tokens=40, max_model_len=2048)
    try:
        result = model.generate([[HumanMessage("hello")]], stop=["STOP"])
    finally:
        model.close()
    generations = result.generations[0]
    assert [g.message.text for g in generations] == ["hello#0", "hello#1", "hello#2"]
    (llm,) = FakeLLM.instances
    assert llm.init_kwargs["model"] == "fake/model"
    assert llm.init_kwargs["max_model_len"] == 2048
    ((conversations, params),) = llm.chat_calls
    assert params[0].kwargs == {
        "n": 3,
        "max_tokens": 40,
        "temperature": 0.7,
        "top_p": 0.95,
        "seed": 5,
        "stop": ["STOP"],
    }


def test_per_call_overrides(fake_vllm: types.ModuleType) -> None:
    model = ChatVLLM(model="fake/model")
    try:
        reply = model.invoke("hi", max_tokens=7, temperature=0.0, seed=3, n=2)
    finally:
        model.close()
    assert reply.text == "hi#0"
    assert reply.usage_metadata["input_tokens"] == 3
    ((_, params),) = FakeLLM.instances[0].chat_calls
    assert params[0].kwargs == {
        "n": 2,
        "max_tokens": 7,
        "temperature": 0.0,
        "top_p": 0.95,
        "seed": 3,
    }


def test_concurrent_invokes_share_one_chat_call(fake_vllm: types.ModuleType) -> None:
    model = ChatVLLM(model="fake/model", batch_window_ms=300)
    barrier = threading.Barrier(4)

    def ask(i: int) -> str:
        barrier.wait()
        return model.invoke([SystemMessage("s"), HumanMessage(f"q{i}")]).text

    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            texts = list(pool.map(ask, range(4)))
    finally:
        model.close()
    assert texts == [f"q{i}#0" for i in range(4)]
    (llm,) = FakeLLM.instances
    assert len(llm.chat_calls) == 1
    conversations, params = llm.chat_calls[0]
    assert len(conversations) == 4 and len(params) == 4
    assert sorted(c[-1]["content"] for c in conversations) == ["q0", "q1", "q2", "q3"]


async def _ainvoke_all(model: ChatVLLM) -> list[str]:
    import asyncio

    replies = await asyncio.gather(*(model.ainvoke(f"a{i}") for i in range(3)))
    return [r.text for r in replies]


def test_async_invokes_are_batched(fake_vllm: types.ModuleType) -> None:
    import asyncio

    model = ChatVLLM(model="fake/model", batch_window_ms=200)
    try:
        texts = asyncio.run(_ainvoke_all(model))
    finally:
        model.close()
    assert texts == ["a0#0", "a1#0", "a2#0"]
    assert len(FakeLLM.instances[0].chat_calls) == 1


def test_batch_failure_reaches_every_caller() -> None:
    def explode(conversations, samplings):
        raise RuntimeError("engine died")

    batcher = MicroBatcher(explode, 0.05)
    try:
        futures = [batcher.submit([{"role": "user", "content": "x"}], {}) for _ in range(3)]
        for future in futures:
            with pytest.raises(RuntimeError, match="engine died"):
                future.result(timeout=5)
    finally:
        batcher.close()


def test_missing_vllm_has_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    model = ChatVLLM(model="fake/model")
    try:
        with pytest.raises(ImportError, match=r"tmas\[vllm\]"):
            model.invoke("hi")
    finally:
        model.close()
