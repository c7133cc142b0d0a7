"""ChatOpenAI that names each call's role and prompt in HTTP headers, and sends its token
limit under both names (see :mod:`tmas.llm.openai_wire`, which the package's own endpoint
client shares): langchain-openai sends the limit as ``max_completion_tokens`` only.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_openai import ChatOpenAI

from tmas.llm.openai_wire import role_headers, with_legacy_limit


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
