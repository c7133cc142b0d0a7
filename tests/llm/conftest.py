"""Shared fixtures for the chat-model backend tests."""

from __future__ import annotations

import pytest

from tmas.llm.llamacpp import ChatLlamaCpp
from tmas.llm.model_files import smollm2_path


@pytest.fixture(scope="session")
def smollm2() -> ChatLlamaCpp:
    """One embedded SmolLM2 model shared by the tests (loading it once keeps them fast)."""
    path = smollm2_path()  # the test extra installs it: a missing model is a failure
    return ChatLlamaCpp(
        model_path=str(path),
        n_ctx=1024,
        max_tokens=16,
        temperature=0.0,
        seed=7,
        n_threads=2,
        flash_attn=False,  # outputs independent of batching, so tests can compare them
    )
