"""``tmas serve``: every topology as a model behind an OpenAI-compatible chat completions
server (``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /v1/runs/{id}``)."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from tmas.cli.common import (
    ConcurrencyOption,
    DbOption,
    MemoryOption,
    PluginOption,
    err,
    error_line,
    fail,
)
from tmas.cli.database import check_database
from tmas.cli.endpoints import checked_plans
from tmas.cli.model_options import ModelOptions, model_options
from tmas.config import TMASConfig
from tmas.llm.hosts import is_loopback
from tmas.llm.model_files import ModelFileError
from tmas.roles import RoleBook
from tmas.serve.topologies import offered_topologies


@model_options()
def serve(
    graph: Annotated[
        list[str],
        typer.Option(
            help="a topology to offer besides the bundled ones: a spec file (or a "
            "bundled name, with --no-bundled) (repeatable)"
        ),
    ] = [],  # noqa: B006
    bundled: Annotated[
        bool, typer.Option(help="offer every bundled topology the backend can run")
    ] = True,
    plugin: PluginOption = [],  # noqa: B006
    host: Annotated[str, typer.Option(help="address to listen on (loopback by default)")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=0, max=65535)] = 8000,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="TMAS_SERVE_API_KEY",
            help="require Authorization: Bearer KEY",
            show_default=False,
        ),
    ] = None,
    *,
    models: ModelOptions,
    memory: MemoryOption = None,
    max_concurrency: ConcurrencyOption = None,
    max_concurrent_runs: Annotated[
        int, typer.Option(min=1, help="runs at once; more get HTTP 429")
    ] = 8,
    max_request_bytes: Annotated[int, typer.Option(min=1024)] = 1_000_000,
    max_calls_per_request: Annotated[
        int, typer.Option(min=1, help="model calls one request may cause (all its runs)")
    ] = 2_000,
    max_n: Annotated[int, typer.Option(min=1, help="largest n (runs) per request")] = 8,
    on_disconnect: Annotated[
        str, typer.Option(help="cancel: stop a departed client's runs; finish: let them end")
    ] = "cancel",
    resume_interrupted: Annotated[
        bool, typer.Option(help="continue the runs a stopped or killed server left unfinished")
    ] = False,
    db: DbOption = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "warning",
) -> None:
    """Serve topologies as models through an OpenAI-compatible chat completions API."""
    try:
        from tmas.serve import ChatService, ServeLimits
        from tmas.serve.app import create_app
        from tmas.serve.uvicorn_server import run_server
    except ImportError as exc:
        fail(f"tmas serve needs its extra ({exc.name} is missing): pip install 'tmas[serve]'")
        return
    if on_disconnect not in ("cancel", "finish"):
        fail(f"--on-disconnect must be cancel or finish, not {on_disconnect!r}")
    try:
        spec = models.backend_spec()
        roles = models.role_settings()
        topologies = offered_topologies(graph, plugin, spec.kind, bundled=bundled)
        if not topologies:
            raise ValueError("no topology to offer: give --graph with --no-bundled")
        known = RoleBook.registered().declaring(
            {n: d.model_dump() for t in topologies.values() for n, d in t.roles.items()}
        )
        TMASConfig(roles=roles).check_roles(known)  # each role named is some topology's
        limits = ServeLimits(max_concurrent_runs, max_request_bytes, max_calls_per_request, max_n)
        service = ChatService(
            spec, topologies, db=db, plugins=plugin, roles=roles, memory=memory, limits=limits,
            max_concurrency=max_concurrency, on_disconnect=on_disconnect,  # type: ignore[arg-type]
        )  # fmt: skip
        checked_plans(list(service.offered_plans().values()))  # the models answer
    except (ValueError, ModelFileError) as exc:
        fail(error_line(exc))
        return
    check_database(db)
    if not is_loopback(host) and api_key is None:
        err.print(f"warning: listening on {host} without --api-key: anyone who reaches it can "
                  "run models", markup=False)  # fmt: skip
    app = create_app(service, api_key=api_key, resume_interrupted=resume_interrupted)
    logging.getLogger("tmas.serve").setLevel(logging.INFO)
    err.print(f"serving {len(topologies)} topologies on {spec.describe()} at "
              f"http://{host}:{port}/v1", markup=False)  # fmt: skip
    run_server(app, service, host, port, log_level)
