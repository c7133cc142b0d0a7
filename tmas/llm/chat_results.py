"""A local engine's answers to one request as a langchain-core ChatResult, with usage counted
the same way by every in-process backend (vLLM, transformers); an endpoint's streamed events
as langchain-core chunks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult


@dataclass
class Choice:
    """One generated answer: its text (cut at a stop string), tokens and why it ended."""

    text: str
    tokens: int
    finish_reason: str | None


def chat_result(
    prompt_tokens: int, choices: list[Choice], model_name: str, cached: int | None = None
) -> ChatResult:
    """The answers as a ChatResult with one generation per choice.

    The prompt's tokens (and ``cached``, the share a prefix cache served, as ``cache_read``,
    when the backend reports it) count once, on the first generation, so that summing usage
    over the generations gives the request's true total; ``llm_output["token_usage"]`` holds
    that total too.

    Example:
        >>> result = chat_result(4, [Choice("hi", 2, "stop")], "m", cached=1)
        >>> usage = result.generations[0].message.usage_metadata
        >>> usage["total_tokens"], usage["input_token_details"]
        (6, {'cache_read': 1})
    """
    generations = []
    for index, choice in enumerate(choices):
        first = index == 0
        input_tokens = prompt_tokens if first else 0
        usage = {
            "input_tokens": input_tokens,
            "output_tokens": choice.tokens,
            "total_tokens": input_tokens + choice.tokens,
        }
        if cached is not None:
            usage["input_token_details"] = {"cache_read": cached if first else 0}
        message = AIMessage(
            content=choice.text,
            usage_metadata=usage,
            response_metadata={"finish_reason": choice.finish_reason, "model_name": model_name},
        )
        generations.append(ChatGeneration(message=message))
    completion = sum(c.tokens for c in choices)
    token_usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt_tokens + completion,
    }
    if cached is not None:
        token_usage["cached_prompt_tokens"] = cached
    return ChatResult(
        generations=generations, llm_output={"token_usage": token_usage, "model_name": model_name}
    )


def stream_chunk(event: dict[str, Any] | None) -> ChatGenerationChunk | None:
    """One streamed event as a chunk: its text, and the token counts when the event has them
    (None for an event with neither).

    Example:
        >>> stream_chunk({"choices": [{"delta": {"content": "1"}}]}).text
        '1'
        >>> stream_chunk({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
        ...              ).message.usage_metadata["total_tokens"]
        4
    """
    if not event:
        return None
    choices = event.get("choices") or []
    text = str(((choices[0].get("delta") or {}).get("content") or "") if choices else "")
    usage = event.get("usage")
    if not text and not usage:
        return None
    message = AIMessageChunk(content=text)
    if usage:
        given, made = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        message.usage_metadata = {
            "input_tokens": given, "output_tokens": made, "total_tokens": given + made,
        }  # fmt: skip
    return ChatGenerationChunk(message=message)
