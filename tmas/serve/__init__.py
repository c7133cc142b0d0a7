"""Any topology as a model: an OpenAI-compatible chat completions server (``tmas serve``) and
the same service in-process (:class:`ChatService`). See docs/serve.md."""

from tmas.serve.api_errors import APIError
from tmas.serve.requests import ChatRequest, ServeLimits
from tmas.serve.service import ChatService

__all__ = ["APIError", "ChatRequest", "ChatService", "ServeLimits"]
