"""Which model-call failures are worth retrying, and the error every failed model call raises."""

from __future__ import annotations

import json
from typing import Any

TRANSIENT_STATUS = {408, 409, 429, 500, 502, 503, 504}
_TRANSIENT_NAMES = {
    "APIConnectionError",  # the OpenAI client's dropped connection (and base of its timeout)
    "APITimeoutError",
    "ConnectError",
    "ReadTimeout",
    "RemoteProtocolError",
    "ConnectTimeout",
    "PoolTimeout",
    "WriteTimeout",
    "ReadError",  # httpx: the connection broke while reading the reply
    "WriteError",
    "ClientConnectionError",  # aiohttp: refused, reset or dropped connections (and timeouts)
    "ClientPayloadError",  # aiohttp: a reply body cut short
    "ClientResponseError",  # aiohttp: a reply that is not HTTP (statuses never raise here)
}
MAX_RETRY_AFTER_S = 300.0
_CONTEXT_PHRASES = (
    "context window",
    "context length",
    "maximum model length",
    "prompt is too long",
    "too many tokens",
)


class ContextOverflowError(ValueError):
    """A prompt that cannot fit the model's context window (no retry can fix it)."""


def fatal_cause(exc: BaseException) -> str | None:
    """Why no retry and no other call can succeed (the run should stop and say so), or None.

    Rejected API keys (HTTP 401), refused access (403), an unknown model or endpoint (404) and
    a prompt that cannot fit the model's context are settings to fix, not faults to ride out.

    Example:
        >>> class Unauthorized(Exception):
        ...     status_code = 401
        >>> fatal_cause(Unauthorized("bad key"))
        'the endpoint rejected the API key (HTTP 401)'
        >>> fatal_cause(ContextOverflowError("4200 prompt tokens, n_ctx=4096"))
        "the prompt does not fit the model's context"
        >>> fatal_cause(ConnectionResetError()) is None
        True
    """
    if isinstance(exc, ModelCallError):
        return exc.fatal
    status = getattr(exc, "status_code", None)
    if status == 401:
        return "the endpoint rejected the API key (HTTP 401)"
    if status == 403:
        return "the endpoint refused access (HTTP 403)"
    if status == 404:
        return "the endpoint does not know this model or path (HTTP 404)"
    text = str(exc).lower()
    overflow = isinstance(exc, ContextOverflowError) or any(p in text for p in _CONTEXT_PHRASES)
    if overflow and status in (None, 400, 413, 422):
        return "the prompt does not fit the model's context"
    return None


def is_transient(exc: BaseException) -> bool:
    """True for failures a retry may fix: lost connections, timeouts, HTTP 408/409/429/5xx and
    reply bodies that are not valid JSON (the OpenAI client raises ``json.JSONDecodeError`` on a
    truncated or garbled response).

    Client errors (bad request, auth, unknown model) and bugs are not retried; a
    ``ModelCallError`` carries the verdict on its cause.

    Example:
        >>> is_transient(ConnectionResetError()), is_transient(ValueError("bad prompt"))
        (True, False)
        >>> is_transient(json.JSONDecodeError("Expecting value", "{", 1))
        True
    """
    if isinstance(exc, ModelCallError):
        return exc.transient
    if isinstance(exc, ConnectionError | TimeoutError | json.JSONDecodeError):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in TRANSIENT_STATUS
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


def retry_after_s(exc: BaseException) -> float | None:
    """The seconds an HTTP error's ``Retry-After`` header asks to wait (None when absent).

    Example:
        >>> class Reply:
        ...     headers = {"retry-after": "2"}
        >>> class RateLimited(Exception):
        ...     response = Reply()
        >>> retry_after_s(RateLimited()), retry_after_s(ValueError())
        (2.0, None)
    """
    headers = getattr(getattr(exc, "response", None), "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        seconds = float(value) if value is not None else None
    except (TypeError, ValueError):  # an HTTP date: not worth parsing for a short wait
        return None
    if seconds is None or seconds != seconds:  # absent or NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


class ModelCallError(RuntimeError):
    """A chat-model call of one role failed; ``transient`` says whether a retry may fix it,
    ``retry_after_s`` how long the server asked to wait, and ``fatal`` (a cause, see
    :func:`fatal_cause`) that no call of this model can succeed until a setting is fixed. The
    original error is ``__cause__``.

    Example:
        >>> err = ModelCallError.wrap("verifier", ConnectionResetError("peer reset"))
        >>> str(err), err.transient, err.fatal
        ('verifier call failed: ConnectionResetError: peer reset', True, None)
        >>> print(ModelCallError.wrap("summary", ContextOverflowError("n=5000"), "m"))
        summary model m: the prompt does not fit the model's context (ContextOverflowError: n=5000)
    """

    def __init__(
        self,
        message: str,
        *,
        role: str | None = None,
        transient: bool = False,
        retry_after_s: float | None = None,
        fatal: str | None = None,
        model: str | None = None,
    ) -> None:
        super().__init__(message)
        self.role = role
        self.transient = transient
        self.retry_after_s = retry_after_s
        self.fatal = fatal
        self.model = model

    @classmethod
    def wrap(cls, role: str, exc: BaseException, model: str | None = None) -> ModelCallError:
        """The error raised for ``exc`` escaping a call of ``role``'s ``model``."""
        cause = fatal_cause(exc)
        if cause is not None:
            message = f"{role} model {model or '(unnamed)'}: {cause} ({_describe(exc)})"
        else:
            message = f"{role} call failed: {_describe(exc)}"
        return cls(
            " ".join(message.split()),
            role=role,
            transient=cause is None and is_transient(exc),
            retry_after_s=retry_after_s(exc),
            fatal=cause,
            model=model,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self),), dict(self.__dict__))
