"""The HTTP face of a :class:`~tmas.serve.service.ChatService`: OpenAI's chat completions and
models endpoints, a run's record, bearer-token checks, request size limits and OpenAI-style
errors (never a traceback), as a Starlette application.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tmas.serve.api_errors import APIError, bad_request
from tmas.serve.service import ChatService

RUN_ID_HEADER = "x-tmas-run-id"
log = logging.getLogger("tmas.serve")


def error_response(error: APIError) -> JSONResponse:
    """The JSON response of ``error``.

    Example:
        >>> error_response(APIError(401, "invalid API key")).status_code
        401
    """
    return JSONResponse(error.body(), status_code=error.status)


def check_key(request: Request, api_key: str | None) -> None:
    """APIError 401 unless the request carries ``Authorization: Bearer <api_key>`` (no key
    configured: every request passes). The key is compared in constant time, never echoed."""
    if api_key is None:
        return
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        given.strip().encode(), api_key.encode()
    ):
        raise APIError(401, "invalid or missing API key (Authorization: Bearer ...)",
                       code="invalid_api_key")  # fmt: skip


async def read_json(request: Request, limit: int) -> Any:
    """The request's JSON body; 413 past ``limit`` bytes (read no further), 400 for bad JSON."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise APIError(413, f"the request is {int(declared):,} bytes; the limit is {limit:,}")
    body = bytearray()
    async for part in request.stream():
        body.extend(part)
        if len(body) > limit:
            raise APIError(413, f"the request is over the limit of {limit:,} bytes")
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise bad_request("the request body is not valid JSON") from None


def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event.

    Example:
        >>> sse("[DONE]")
        b'data: [DONE]\\n\\n'
    """
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {text}\n\n".encode()


def create_app(
    service: ChatService, *, api_key: str | None = None, resume_interrupted: bool = False
) -> Starlette:
    """The ASGI application serving ``service``; with ``resume_interrupted`` the runs a
    stopped server left unfinished continue when it starts.

    Example:
        >>> import tempfile, os
        >>> from starlette.testclient import TestClient
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.llm.backend import BackendSpec
        >>> service = ChatService(BackendSpec(kind="openai", model="m", base_url="http://h/v1"),
        ...                       {"tmas": load_bundled("tmas")},
        ...                       db=os.path.join(tempfile.mkdtemp(), "runs.sqlite"))
        >>> with TestClient(create_app(service, api_key="k")) as client:
        ...     client.get("/v1/models").status_code, client.get(
        ...         "/v1/models", headers={"Authorization": "Bearer k"}).json()["data"][0]["id"]
        (401, 'tmas')
    """

    async def models(request: Request) -> Response:
        check_key(request, api_key)
        return JSONResponse(service.models())

    async def model(request: Request) -> Response:
        check_key(request, api_key)
        name = request.path_params["model"]
        found = [m for m in service.models()["data"] if m["id"] == name]
        if not found:
            raise APIError(404, f"the model {name!r} does not exist", code="model_not_found")
        return JSONResponse(found[0])

    async def run(request: Request) -> Response:
        check_key(request, api_key)
        return JSONResponse(service.run(request.path_params["run_id"]))

    async def completions(request: Request) -> Response:
        check_key(request, api_key)
        chat = service.read(await read_json(request, service.limits.max_request_bytes))
        launch = service.launch(chat)
        headers = {RUN_ID_HEADER: ",".join(launch.run_ids)}
        if chat.stream:
            return StreamingResponse(
                _events(service.stream(launch)),
                media_type="text/event-stream",
                headers={**headers, "cache-control": "no-cache"},
            )
        body = await service.finish(launch, watch=request.is_disconnected)
        return JSONResponse(body, headers=headers)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, APIError)
        return error_response(exc)

    async def unexpected(request: Request, exc: Exception) -> Response:
        log.error("request failed: %s: %s", type(exc).__name__, exc)
        return error_response(APIError(500, f"internal error: {type(exc).__name__}: {exc}"))

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        message = "not found" if status == 404 else "method not allowed"
        return error_response(APIError(status, f"{message}: {request.method} {request.url.path}"))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if resume_interrupted:
            resumed = service.resume_interrupted()
            log.warning("resuming %d interrupted run(s): %s", len(resumed), " ".join(resumed))
        yield
        service.close()

    return Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model:path}", model, methods=["GET"]),
            Route("/v1/chat/completions", completions, methods=["POST"]),
            Route("/v1/runs/{run_id}", run, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
        ],
        exception_handlers={
            APIError: api_error,
            Exception: unexpected,
            404: not_found,
            405: not_found,
        },
        lifespan=lifespan,
    )


async def _events(chunks: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    """The SSE stream of a completion's chunks, ended by ``[DONE]`` (an error ends it too)."""
    async for item in chunks:
        yield sse(item)
        if "error" in item:
            break
    yield sse("[DONE]")
