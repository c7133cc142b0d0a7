"""Which model-call failures are worth retrying."""

from __future__ import annotations

TRANSIENT_STATUS = {408, 409, 429, 500, 502, 503, 504}
_TRANSIENT_NAMES = {
    "APIConnectionError",
    "APITimeoutError",
    "ConnectError",
    "ReadTimeout",
    "RemoteProtocolError",
    "ConnectTimeout",
    "PoolTimeout",
}


def is_transient(exc: BaseException) -> bool:
    """True for failures a retry may fix: lost connections, timeouts, HTTP 408/409/429/5xx.

    Client errors (bad request, auth, unknown model) and bugs are not retried.

    Example:
        >>> is_transient(ConnectionResetError()), is_transient(ValueError("bad prompt"))
        (True, False)
    """
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in TRANSIENT_STATUS
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)
