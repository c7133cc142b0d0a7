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
