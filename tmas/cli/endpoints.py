"""Models for the command line: a router built only after its model servers answer, so a run
is never registered (or resumed) against a server that cannot be reached."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tmas.graphs.run_plan import RunPlan, plan_router
from tmas.storage import redact

if TYPE_CHECKING:  # made by plan_router, which loads the model stack
    from tmas.llm.router import ModelRouter

CONNECT_TIMEOUT_S = 5.0
DEFAULT_PORTS = {"http": 80, "https": 443}


class EndpointError(ValueError):
    """A model server named by ``--base-url`` or ``--role-base-url`` cannot be reached."""


def endpoint_urls(plan: RunPlan) -> list[str]:
    """The OpenAI-compatible servers a run of ``plan`` calls (its roles' bindings), each once.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.graphs.run_plan import plan_run
        >>> from tmas.llm.backend import BackendSpec
        >>> backend = BackendSpec(kind="openai", base_url="http://a:8000/v1", model="m")
        >>> plan = plan_run(load_bundled("tmas"), {"roles": {"verifier": {"base_url":
        ...                 "http://b/v1"}}}, backend)
        >>> endpoint_urls(plan)
        ['http://a:8000/v1', 'http://b/v1']
    """
    urls = [binding.base_url for binding in plan.bindings.values() if binding.base_url]
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


def checked_plans(plans: list[RunPlan]) -> ModelRouter:
    """The models of the first of ``plans`` once every server any of them calls answers (what
    a server checks before it offers them); raises as :func:`checked_router` does.

    Example:
        >>> checked_plans([])
        Traceback (most recent call last):
        ...
        ValueError: no plan to check
    """
    if not plans:
        raise ValueError("no plan to check")
    for url in dict.fromkeys(url for plan in plans for url in endpoint_urls(plan)):
        check_reachable(url)
    return plan_router(plans[0])


def checked_router(plan: RunPlan) -> ModelRouter:
    """The models of a run of ``plan`` (:func:`tmas.graphs.run_plan.plan_router`) once every
    server they call answers; raises EndpointError, or the backend's own error (unknown model,
    ...), before any run is saved. Usable as ``RunManager(router_factory=...)``.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.graphs.run_plan import plan_run
        >>> from tmas.llm.backend import BackendSpec
        >>> checked_router(plan_run(load_bundled("tmas"), None,
        ...                         BackendSpec(kind="openai", base_url="http://127.0.0.1:1/v1",
        ...                                     model="m")))
        Traceback (most recent call last):
        ...
        tmas.cli.endpoints.EndpointError: cannot reach the model server at http://127.0.0.1:1/v1...
    """
    for url in endpoint_urls(plan):
        check_reachable(url)
    return plan_router(plan)
