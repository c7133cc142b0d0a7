"""Errors of the chat completions API, as OpenAI's API reports them: an HTTP status and a JSON
body ``{"error": {"message", "type", "param", "code"}}`` (never a traceback)."""

from __future__ import annotations

from typing import Any


class APIError(Exception):
    """A request the server refuses or could not serve.

    Example:
        >>> error = APIError(404, "model 'x' does not exist", code="model_not_found",
        ...                  param="model")
        >>> error.status, error.body()["error"]["type"]
        (404, 'invalid_request_error')
    """

    TYPES = {
        400: "invalid_request_error",
        401: "authentication_error",
        404: "invalid_request_error",
        413: "invalid_request_error",
        429: "rate_limit_error",
        499: "request_cancelled",
        500: "server_error",
        502: "server_error",
        503: "server_error",
    }

    def __init__(
        self, status: int, message: str, *, code: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param

    def body(self) -> dict[str, Any]:
        """The JSON body OpenAI's clients read the error from."""
        kind = self.TYPES.get(self.status, "server_error" if self.status >= 500 else "error")
        return {
            "error": {
                "message": self.message,
                "type": kind,
                "param": self.param,
                "code": self.code,
            }
        }


def bad_request(message: str, param: str | None = None) -> APIError:
    """A 400 with ``message`` naming what is wrong.

    Example:
        >>> bad_request("n must be at least 1", "n").status
        400
    """
    return APIError(400, message, code="invalid_value" if param else None, param=param)
