"""ChatOpenAI that names each call's role and prompt in HTTP headers, and sends its token
limit under both names.

Model calls carry their role as metadata (see :func:`tmas.llm.router.call_metadata`); over
HTTP that metadata would be lost, so this client sends it as ``X-TMAS-Role`` and
``X-TMAS-Prompt`` headers, which servers may log and our scripted test servers answer by.

langchain-openai sends the limit as ``max_completion_tokens`` only, which some
OpenAI-compatible servers do not read (llama-cpp-python's server generated ~600 tokens for a
call limited to 24); the legacy ``max_tokens`` goes along, except to OpenAI's reasoning
models, which refuse it.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_openai import ChatOpenAI

ROLE_HEADER = "X-TMAS-Role"
PROMPT_HEADER = "X-TMAS-Prompt"
ONLY_NEW_LIMIT = re.compile(r"^(o\d|gpt-5)")  # OpenAI models that refuse max_tokens


def with_legacy_limit(payload: dict[str, Any], model: str | None) -> dict[str, Any]:
    """The request body with ``max_tokens`` beside ``max_completion_tokens``.

    Example:
        >>> with_legacy_limit({"max_completion_tokens": 24}, "smollm2")
        {'max_completion_tokens': 24, 'max_tokens': 24}
        >>> with_legacy_limit({"max_completion_tokens": 24}, "o3-mini")
        {'max_completion_tokens': 24}
    """
    limit = payload.get("max_completion_tokens")
    if limit is not None and not ONLY_NEW_LIMIT.match(model or ""):
        payload["max_tokens"] = limit
    return payload


def role_headers(metadata: dict[str, Any] | None) -> dict[str, str]:
    """The headers naming a call's role and prompt, from its metadata.

    Example:
        >>> role_headers({"tmas_role": "verifier", "tmas_prompt": "verifier/user"})
        {'X-TMAS-Role': 'verifier', 'X-TMAS-Prompt': 'verifier/user'}
    """
    metadata = metadata or {}
    found = {ROLE_HEADER: metadata.get("tmas_role"), PROMPT_HEADER: metadata.get("tmas_prompt")}
    return {name: str(value) for name, value in found.items() if value}


class RoleTaggedChatOpenAI(ChatOpenAI):
    """A ``ChatOpenAI`` whose requests carry the call's role and prompt as headers, and their
    token limit under both names."""

    def _get_request_payload(self, input_: Any, *, stop: Any = None, **kwargs: Any) -> dict:
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        return with_legacy_limit(payload, self.model_name)

    def _with_headers(self, run_manager: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        headers = role_headers(getattr(run_manager, "metadata", None))
        if headers:
            kwargs = {**kwargs, "extra_headers": {**kwargs.get("extra_headers", {}), **headers}}
        return kwargs

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        kwargs = self._with_headers(run_manager, kwargs)
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        kwargs = self._with_headers(run_manager, kwargs)
        return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)
