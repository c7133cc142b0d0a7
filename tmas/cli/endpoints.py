"""Models for the command line: a router built only after its model servers answer, so a run
is never registered (or resumed) against a server that cannot be reached."""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlsplit

from tmas.config import TMASConfig
from tmas.llm.backend import BackendSpec, make_router
from tmas.llm.router import ModelRouter
from tmas.storage import redact

CONNECT_TIMEOUT_S = 5.0
DEFAULT_PORTS = {"http": 80, "https": 443}


class EndpointError(ValueError):
    """A model server named by ``--base-url`` or ``--role-base-url`` cannot be reached."""


def endpoint_urls(spec: BackendSpec, config: TMASConfig) -> list[str]:
    """The OpenAI-compatible servers a run of ``spec`` and ``config`` calls, each once.

    Example:
        >>> from tmas.config import RoleModel
        >>> spec = BackendSpec(kind="openai", base_url="http://a:8000/v1", model="m")
        >>> config = TMASConfig(roles={"verifier": RoleModel(base_url="http://b/v1")})
        >>> endpoint_urls(spec, config)
        ['http://a:8000/v1', 'http://b/v1']
    """
    urls = [spec.base_url] if spec.kind == "openai" and spec.base_url else []
    urls += [role.base_url for role in config.roles.values() if role.base_url]
    return list(dict.fromkeys(urls))


def check_reachable(url: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Open (and close) a TCP connection to the host and port of ``url``; EndpointError naming
    the server when that fails within ``timeout_s``.

    Example:
        >>> check_reachable("http://127.0.0.1:1/v1")
        Traceback (most recent call last):
        ...
        tmas.cli.endpoints.EndpointError: cannot reach the model server at http://127.0.0.1:1/v1...
    """
    shown = redact(url)
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError as exc:
        raise EndpointError(f"invalid model server URL {shown}: {exc}") from None
    if not host or port is None:
        raise EndpointError(f"invalid model server URL {shown}: expected http(s)://HOST[:PORT]/…")
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise EndpointError(
            f"cannot reach the model server at {shown}: {reason} (is it running?)"
        ) from None


def checked_router(backend: BackendSpec | dict[str, Any], config: TMASConfig) -> ModelRouter:
    """The models of ``backend`` (a BackendSpec or its saved form) once every server they call
    answers; raises EndpointError, or the backend's own error (unknown model, ...), before any
    run is saved. Usable as ``RunManager(router_factory=...)``.

    Example:
        >>> checked_router({"kind": "openai", "model": "m"}, TMASConfig())
        Traceback (most recent call last):
        ...
        ValueError: the openai backend needs --base-url and --model
    """
    spec = backend if isinstance(backend, BackendSpec) else BackendSpec(**backend)
    for url in endpoint_urls(spec, config):
        check_reachable(url)
    return make_router(spec, config)
