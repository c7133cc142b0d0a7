"""``tmas resume``: continue a saved run from its last checkpoint."""

from __future__ import annotations

from typing import Annotated

import typer

from tmas.cli.common import (
    ConcurrencyOption,
    DbOption,
    EngineArgOption,
    GpuMemoryOption,
    JsonOption,
    PipelineParallelOption,
    ReviewOption,
    RoleBaseUrlOption,
    RoleModelOption,
    StreamOption,
    TensorParallelOption,
    error_line,
    fail,
    open_manager,
    require_rebuildable,
)
from tmas.cli.endpoints import checked_router
from tmas.cli.inputs import engine_args, revised_settings
from tmas.cli.outcome import drive, finish, live_options
from tmas.config import TMASConfig
from tmas.lifecycle.history import saved_state
from tmas.llm.model_files import ModelFileError
from tmas.storage.run_registry import UnknownRunError


def resume(
    run_id: str,
    db: DbOption = None,
    max_concurrency: ConcurrencyOption = None,
    quiet: bool = False,
    stream: StreamOption = False,
    review: ReviewOption = False,
    as_json: JsonOption = False,
    model: Annotated[
        str | None, typer.Option(help="continue with this main model instead (a corrected name)")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="continue against this endpoint instead (a moved server)")
    ] = None,
    role_model: RoleModelOption = [],  # noqa: B006
    role_base_url: RoleBaseUrlOption = [],  # noqa: B006
    n_ctx: Annotated[
        int | None, typer.Option(help="continue with this context window (local engine)")
    ] = None,
    engine_arg: EngineArgOption = [],  # noqa: B006
    gpu_memory_utilization: GpuMemoryOption = None,
    tensor_parallel_size: TensorParallelOption = None,
    pipeline_parallel_size: PipelineParallelOption = None,
) -> None:
    """Continue an interrupted or paused run from its last checkpoint, repeating no finished
    call; model options correct what stopped it (an unknown model, a moved server, a context
    too small) and are saved with the run."""
    with open_manager(db, create=False) as manager:
        try:
            record = manager.registry.get(run_id)
        except UnknownRunError as exc:
            fail(str(exc))
            return
        state = saved_state(manager.storage, run_id, full_history=False)
        if not state.get("stop_reason") and not (base_url and model):  # a finished run is shown
            require_rebuildable(
                record,
                f"tmas.resume({run_id!r}, llm=MODEL)",
                " (or here, with --base-url and --model of a server that serves it)",
            )
        settings = None
        try:
            engine_options = engine_args(
                engine_arg, gpu_memory_utilization, tensor_parallel_size, pipeline_parallel_size
            )
        except ValueError as exc:
            fail(error_line(exc))
            return
        if model or base_url or role_model or role_base_url or n_ctx or engine_options:
            try:
                settings = revised_settings(
                    record.config,
                    record.backend,
                    model=model,
                    base_url=base_url,
                    n_ctx=n_ctx,
                    engine_options=engine_options,
                    role_models=role_model,
                    role_base_urls=role_base_url,
                )
                checked_router(settings[1], TMASConfig(**settings[0]))
            except (ValueError, ModelFileError) as exc:
                fail(error_line(exc))
                return
        outcome = drive(
            lambda: manager.resume(
                run_id,
                show_progress=not quiet,
                max_concurrency=max_concurrency,
                settings=settings,
                **live_options(stream, review),
            ),
            run_id,
            manager,
        )
        finish(outcome, as_json)
