"""The pieces of an OpenAI chat completion answer the scripted servers build: a message's
text, a word count standing for tokens, and a streamed answer as server-sent events."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


def text_of(message: dict[str, Any]) -> str:
    """Flatten an OpenAI message's ``content`` (a string or a list of parts) to text.

    Example:
        >>> text_of({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
        'a\\nb'
    """
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return "" if content is None else str(content)


def count_words(text: str) -> int:
    """Whitespace-separated words: the token count the scripted servers report.

    Example:
        >>> count_words("so the answer is 18")
        5
    """
    return len(text.split())


def send_stream(
    handler: BaseHTTPRequestHandler,
    head: dict[str, Any],
    content: str,
    n: int,
    usage: dict[str, int] | None,
) -> None:
    """Send ``n`` choices of ``content`` as server-sent chat.completion.chunk events."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Connection", "close")
    handler.end_headers()
    handler.close_connection = True

    def emit(choices: list[dict[str, Any]], **extra: Any) -> None:
        chunk = {**head, "object": "chat.completion.chunk", "choices": choices, **extra}
        handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())

    for i in range(n):
        deltas = [{"role": "assistant", "content": ""}]
        deltas += [{"content": piece} for piece in content.splitlines(keepends=True)]
        for delta in deltas:
            emit([{"index": i, "delta": delta, "finish_reason": None}])
        emit([{"index": i, "delta": {}, "finish_reason": "stop"}])
    if usage is not None:
        emit([], usage=usage)
    handler.wfile.write(b"data: [DONE]\n\n")
    handler.wfile.flush()
