"""Chat models served over an OpenAI-compatible HTTP API (``vllm serve``, llama.cpp, ...): the
package's own lean client (:func:`make_endpoint_model`, what the built-in backends use) and
LangChain's ``ChatOpenAI`` (:func:`make_openai_chat_model`, for code that wants the OpenAI
SDK's behaviour and errors)."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from tmas.llm.endpoint import EndpointChatModel, api_key_from_env, finite_timeout


def make_openai_chat_model(
    *,
    base_url: str,
    model: str,
    api_key_env: str = "TMAS_API_KEY",
    max_tokens: int,
    temperature: float,
    timeout: float = 600,
    max_retries: int = 0,
) -> BaseChatModel:
    """Return a ``ChatOpenAI`` talking to an OpenAI-compatible server (each request names its
    role and prompt in ``X-TMAS-Role``/``X-TMAS-Prompt`` headers).

    The key is read from the environment variable named ``api_key_env``, else from
    ``OPENAI_API_KEY``, else ``"EMPTY"``; it is kept as a secret and never printed.

    Args:
        base_url: the server's ``/v1`` root, e.g. ``http://localhost:8000/v1``.
        model: the served model name.
        api_key_env: the environment variable holding the key.
        max_tokens: the most tokens generated per call.
        temperature: the sampling temperature.
        timeout: seconds before one request is abandoned (finite: a hung server must not hang
            the run).
        max_retries: the client's own retries of a failed request; 0 by default, as TMAS
            retries a failed call itself (with backoff, through the graph's retry policy) and
            the two would multiply.

    Example:
        >>> chat = make_openai_chat_model(base_url="http://localhost:8000/v1",
        ...                               model="Qwen/Qwen3-8B", max_tokens=256, temperature=0.7)
        >>> chat.model_name
        'Qwen/Qwen3-8B'
    """
    finite_timeout(timeout)
    from tmas.llm.openai_roles import RoleTaggedChatOpenAI

    return RoleTaggedChatOpenAI(
        base_url=base_url,
        model=model,
        api_key=api_key_from_env(api_key_env),
        max_tokens=max_tokens,
        temperature=temperature,
        timeout=timeout,
        max_retries=max_retries,
    )


def make_endpoint_model(
    *,
    base_url: str,
    model: str,
    api_key_env: str = "TMAS_API_KEY",
    max_tokens: int,
    temperature: float | None,
    timeout: float = 600,
    max_retries: int = 0,
) -> EndpointChatModel:
    """The package's own client of an OpenAI-compatible server (:mod:`tmas.llm.endpoint`),
    with the same settings as :func:`make_openai_chat_model` (the key from ``api_key_env``,
    else ``OPENAI_API_KEY``, else ``"EMPTY"``; no retries of its own by default).

    Example:
        >>> chat = make_endpoint_model(base_url="http://localhost:8000/v1", model="m",
        ...                            max_tokens=256, temperature=0.7)
        >>> chat.model_name, chat.max_retries
        ('m', 0)
    """
    return EndpointChatModel(
        base_url=base_url,
        model=model,
        api_key=api_key_from_env(api_key_env),
        max_tokens=max_tokens,
        temperature=temperature,
        timeout=timeout,
        max_retries=max_retries,
    )
