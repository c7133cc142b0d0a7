"""ChatOpenAI that names each call's role and prompt in HTTP headers.

Model calls carry their role as metadata (see :func:`tmas.llm.router.call_metadata`); over
HTTP that metadata would be lost, so this client sends it as ``X-TMAS-Role`` and
``X-TMAS-Prompt`` headers, which servers may log and our scripted test servers answer by.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_openai import ChatOpenAI

ROLE_HEADER = "X-TMAS-Role"
PROMPT_HEADER = "X-TMAS-Prompt"


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
    """A ``ChatOpenAI`` whose requests carry the call's role and prompt as headers."""

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
