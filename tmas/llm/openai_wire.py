"""What goes over the wire to an OpenAI-compatible ``/chat/completions`` endpoint and back:
the request body, the headers naming a call's role and prompt, the reply's text and token
counts, and the error an HTTP status other than 200 becomes. Plain data only: no HTTP client
and no model library is imported here.

Model calls carry their role as metadata (see :func:`tmas.llm.calls.call_metadata`); over HTTP
that metadata would be lost, so clients send it as ``X-TMAS-Role`` and ``X-TMAS-Prompt``
headers, which servers may log and our scripted test servers answer by. The token limit goes
as ``max_tokens`` and ``max_completion_tokens``: some servers read only the legacy name
(llama-cpp-python's generated ~600 tokens for a call limited to 24), and OpenAI's reasoning
models refuse it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ROLE_HEADER = "X-TMAS-Role"
PROMPT_HEADER = "X-TMAS-Prompt"
ONLY_NEW_LIMIT = re.compile(r"^(o\d|gpt-5)")  # OpenAI models that refuse max_tokens

_ROLE_OF_TYPE = {"system": "system", "human": "user", "ai": "assistant"}


def to_chat_dicts(messages: Sequence[Any]) -> list[dict[str, str]]:
    """LangChain messages as OpenAI-style chat dicts (system / user / assistant).

    Messages of other types (tool, function, chat) are sent as ``user`` turns.

    Example:
        >>> from langchain_core.messages import HumanMessage, SystemMessage
        >>> to_chat_dicts([SystemMessage("be brief"), HumanMessage("hi")])
        [{'role': 'system', 'content': 'be brief'}, {'role': 'user', 'content': 'hi'}]
    """
    return [{"role": _ROLE_OF_TYPE.get(m.type, "user"), "content": m.text} for m in messages]


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


def role_headers(metadata: Mapping[str, Any] | None) -> dict[str, str]:
    """The headers naming a call's role and prompt, from its metadata.

    Example:
        >>> role_headers({"tmas_role": "verifier", "tmas_prompt": "verifier/user"})
        {'X-TMAS-Role': 'verifier', 'X-TMAS-Prompt': 'verifier/user'}
    """
    metadata = metadata or {}
    found = {ROLE_HEADER: metadata.get("tmas_role"), PROMPT_HEADER: metadata.get("tmas_prompt")}
    return {name: str(value) for name, value in found.items() if value}


def chat_request(
    model: str,
    messages: Sequence[Mapping[str, str]],
    *,
    max_tokens: int | None,
    temperature: float | None = None,
    seed: int | None = None,
    stop: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The JSON body of one chat completion request (settings left None are not sent).

    Example:
        >>> chat_request("m", [{"role": "user", "content": "Hi"}], max_tokens=8, seed=3)
        {'model': 'm', 'messages': [{'role': 'user', 'content': 'Hi'}], 'seed': 3, \
'max_completion_tokens': 8, 'max_tokens': 8}
    """
    body: dict[str, Any] = {"model": model, "messages": list(messages)}
    for name, value in (("temperature", temperature), ("seed", seed)):
        if value is not None:
            body[name] = value
    if stop:
        body["stop"] = list(stop)
    if max_tokens is not None:
        body["max_completion_tokens"] = max_tokens
    return with_legacy_limit(body, model)


@dataclass(frozen=True)
class ChatReply:
    """The first choice of a chat completion: its text, why it ended and the token counts."""

    text: str
    finish_reason: str | None
    input_tokens: int
    output_tokens: int


def read_reply(data: Any) -> ChatReply:
    """A chat completion's JSON as a :class:`ChatReply`; ValueError for a body without a
    choice (a server fault, retried like a garbled reply).

    Example:
        >>> read_reply({"choices": [{"message": {"content": "18"}, "finish_reason": "stop"}],
        ...             "usage": {"prompt_tokens": 9, "completion_tokens": 2}})
        ChatReply(text='18', finish_reason='stop', input_tokens=9, output_tokens=2)
    """
    try:
        choice = data["choices"][0]
        message = choice.get("message") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        raise json.JSONDecodeError("the reply has no choice", json.dumps(data)[:200], 0) from None
    usage = data.get("usage") or {}
    return ChatReply(
        text=str(message.get("content") or ""),
        finish_reason=choice.get("finish_reason"),
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
    )


def stream_settings() -> dict[str, Any]:
    """What a request adds to be streamed, with the token counts in its last event.

    Example:
        >>> stream_settings()
        {'stream': True, 'stream_options': {'include_usage': True}}
    """
    return {"stream": True, "stream_options": {"include_usage": True}}


def stream_event(line: str) -> dict[str, Any] | None:
    """One server-sent event line of a streamed completion as JSON (None: not a data line, or
    the closing ``[DONE]``); an error event raises :class:`EndpointStatusError` (500: retried).

    Example:
        >>> stream_event('data: {"choices": [{"delta": {"content": "1"}}]}')
        {'choices': [{'delta': {'content': '1'}}]}
        >>> stream_event("data: [DONE]") is None, stream_event(": keep-alive") is None
        (True, True)
        >>> stream_event('data: {"error": {"message": "engine died"}}')
        Traceback (most recent call last):
        ...
        tmas.llm.openai_wire.EndpointStatusError: HTTP 500: engine died
    """
    if not line.startswith("data:"):
        return None
    payload = line[5:].strip()
    if payload == "[DONE]":
        return None
    event = json.loads(payload)
    if isinstance(event, dict) and event.get("error"):  # the server failed mid-stream
        raise EndpointStatusError(500, payload)
    return event


class EndpointStatusError(Exception):
    """An endpoint answered with an HTTP status other than 200. ``status_code`` and
    ``response`` (its headers, for ``Retry-After``) are what :mod:`tmas.llm.errors` reads to
    tell a fault worth retrying from a setting to fix.

    Example:
        >>> error = EndpointStatusError(404, '{"error": {"message": "no model m"}}')
        >>> error.status_code, str(error)
        (404, 'HTTP 404: no model m')
    """

    def __init__(self, status_code: int, body: str, response: Any = None) -> None:
        self.status_code = status_code
        self.response = response
        super().__init__(f"HTTP {status_code}: {error_message(body)}")


def error_message(body: str) -> str:
    """The message of an error reply (its ``error.message`` when it is OpenAI's JSON shape).

    Example:
        >>> error_message('{"error": {"message": "maximum context length is 2048"}}')
        'maximum context length is 2048'
        >>> error_message("Bad Gateway")
        'Bad Gateway'
    """
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:500]
    found = data.get("error") if isinstance(data, dict) else None
    if isinstance(found, dict) and found.get("message"):
        return str(found["message"])[:500]
    if isinstance(found, str):
        return found[:500]
    return body.strip()[:500]
