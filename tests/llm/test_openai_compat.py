"""Tests for the OpenAI-compatible server backend (no server is contacted)."""

from __future__ import annotations

import pytest

from tmas.llm.openai_compat import make_openai_chat_model

SECRET = "sk-test-do-not-print-1234567890"


def _model(**overrides: object):
    kwargs = dict(
        base_url="http://localhost:8000/v1", model="served-model", max_tokens=64, temperature=0.3
    )
    kwargs.update(overrides)
    return make_openai_chat_model(**kwargs)


def test_key_from_named_env_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_VLLM_KEY", SECRET)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = _model(api_key_env="MY_VLLM_KEY")
    assert model.openai_api_key.get_secret_value() == SECRET
    assert SECRET not in repr(model)
    assert SECRET not in str(model)
    assert SECRET not in model.model_dump_json()


def test_key_falls_back_to_openai_then_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMAS_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    assert _model().openai_api_key.get_secret_value() == SECRET
    monkeypatch.delenv("OPENAI_API_KEY")
    assert _model().openai_api_key.get_secret_value() == "EMPTY"


def test_default_env_var_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMAS_API_KEY", "tmas-key")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key")
    assert _model().openai_api_key.get_secret_value() == "tmas-key"


def test_settings_passed_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMAS_API_KEY", raising=False)
    model = _model(timeout=30, max_retries=5)
    assert model.openai_api_base == "http://localhost:8000/v1"
    assert model.model_name == "served-model"
    assert model.max_tokens == 64
    assert model.temperature == 0.3
    assert model.request_timeout == 30
    assert model.max_retries == 5
