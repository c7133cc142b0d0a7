"""Tests for the embedded llama.cpp chat model, run on the real SmolLM2-135M."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from tmas.llm.llamacpp import ChatLlamaCpp, to_chat_dicts

pytestmark = pytest.mark.slow


def test_to_chat_dicts_roles() -> None:
    chat = to_chat_dicts([SystemMessage("s"), HumanMessage("u"), AIMessage("a")])
    assert [d["role"] for d in chat] == ["system", "user", "assistant"]
    assert [d["content"] for d in chat] == ["s", "u", "a"]


def test_invoke_returns_text_and_usage(smollm2: ChatLlamaCpp) -> None:
    reply = smollm2.invoke([SystemMessage("You are brief."), HumanMessage("What is 2+2?")])
    assert isinstance(reply, AIMessage)
    assert reply.text.strip()
    usage = reply.usage_metadata
    assert usage is not None
    assert usage["input_tokens"] > 0
    assert 0 < usage["output_tokens"] <= 16
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert reply.response_metadata["model_name"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert reply.response_metadata["finish_reason"] in {"stop", "length"}


def test_per_call_max_tokens_override(smollm2: ChatLlamaCpp) -> None:
    reply = smollm2.invoke("Count from one to one hundred in words.", max_tokens=4)
    assert 0 < reply.usage_metadata["output_tokens"] <= 4
    assert reply.response_metadata["finish_reason"] == "length"


def test_max_tokens_shrinks_to_fit_context(smollm2: ChatLlamaCpp) -> None:
    long_prompt = "Repeat after me: " + "apple " * 900
    reply = smollm2.invoke(long_prompt, max_tokens=10_000)
    usage = reply.usage_metadata
    assert usage["input_tokens"] + usage["output_tokens"] <= smollm2.n_ctx


def test_prompt_too_long_raises_clear_error(smollm2: ChatLlamaCpp) -> None:
    with pytest.raises(ValueError, match="prompt too long.*n_ctx"):
        smollm2.invoke("banana " * 3000)


def test_stream_yields_text(smollm2: ChatLlamaCpp) -> None:
    chunks = list(smollm2.stream("Say hello.", max_tokens=8))
    full = chunks[0]
    for chunk in chunks[1:]:
        full = full + chunk
    assert full.text.strip()
    assert full.response_metadata.get("finish_reason") in {"stop", "length"}


def test_concurrent_invokes_all_succeed(smollm2: ChatLlamaCpp) -> None:
    questions = ["What is 1+1?", "Name a colour.", "What is the capital of France?"]
    with ThreadPoolExecutor(max_workers=3) as pool:
        replies = list(pool.map(lambda q: smollm2.invoke(q, max_tokens=8), questions))
    assert len(replies) == 3
    assert all(r.usage_metadata["output_tokens"] > 0 for r in replies)


def test_missing_file_fails_on_first_call(tmp_path) -> None:
    model = ChatLlamaCpp(model_path=str(tmp_path / "absent.gguf"))
    assert model._llm_type == "llamacpp"
    with pytest.raises((ValueError, RuntimeError, FileNotFoundError)):
        model.invoke("hi")


def test_async_calls_are_batched_and_usage_is_exact(smollm2: ChatLlamaCpp) -> None:
    import asyncio

    story = "A cat sat on a mat and counted the birds on the wall. " * 4 + "What is 3+4?"
    questions = [story, "Name a fruit.", story, "Say one word."]

    async def ask_all() -> list[AIMessage]:
        return await asyncio.gather(*(smollm2.ainvoke(q, max_tokens=6) for q in questions))

    engine = smollm2._server()
    engine.scheduler.stats.reset()
    replies = asyncio.run(ask_all())
    for question, reply in zip(questions, replies, strict=True):
        usage = reply.usage_metadata
        prompt = engine.model.prompt_tokens([{"role": "user", "content": question}])
        assert usage["input_tokens"] == len(prompt)
        assert 0 < usage["output_tokens"] <= 6
        assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    stats = engine.stats()
    assert stats["output_tokens"] == sum(r.usage_metadata["output_tokens"] for r in replies)
    assert stats["max_batch_sequences"] >= 2  # the four calls were decoded together
    assert replies[0].text == replies[2].text  # greedy, same prompt
    copied = [r.usage_metadata.get("input_token_details", {}).get("cache_read", 0) for r in replies]
    same_prompt = replies[0].usage_metadata["input_tokens"]
    assert max(copied[0], copied[2]) == same_prompt - 1  # one computed it, the other copied


def test_async_stream_yields_text_then_usage(smollm2: ChatLlamaCpp) -> None:
    import asyncio

    async def collect() -> list:
        return [chunk async for chunk in smollm2.astream("Say hello.", max_tokens=8)]

    chunks = asyncio.run(collect())
    full = chunks[0]
    for chunk in chunks[1:]:
        full = full + chunk
    assert full.text.strip()
    assert 0 < full.usage_metadata["output_tokens"] <= 8


def test_serial_engine_answers_like_a_chat_model() -> None:
    from tmas.llm.model_files import smollm2_path

    serial = ChatLlamaCpp(
        model_path=str(smollm2_path()), n_ctx=1024, max_tokens=8, temperature=0.0, engine="serial"
    )
    reply = serial.invoke("What is 2+2?")
    assert reply.text.strip()
    assert 0 < reply.usage_metadata["output_tokens"] <= 8
    chunks = list(serial.stream("Say hello.", max_tokens=4))
    full = chunks[0]
    for chunk in chunks[1:]:
        full = full + chunk
    assert full.text.strip()
    assert full.response_metadata["finish_reason"] in {"stop", "length"}
    assert 0 < full.usage_metadata["output_tokens"] <= 4


def test_seed_is_honoured_per_call(smollm2: ChatLlamaCpp) -> None:
    ask = "Invent a name for a cat."
    first = smollm2.invoke(ask, temperature=1.0, seed=5, max_tokens=12).text
    again = smollm2.invoke(ask, temperature=1.0, seed=5, max_tokens=12).text
    assert first == again
