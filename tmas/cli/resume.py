"""``tmas resume``: continue a saved run from its last checkpoint."""

from __future__ import annotations

from tmas.cli.common import (
    ConcurrencyOption,
    DbOption,
    JsonOption,
    ReviewOption,
    StreamOption,
    error_line,
    fail,
)
from tmas.cli.database import open_manager, require_rebuildable
from tmas.cli.endpoints import checked_router
from tmas.cli.model_options import ModelOptions, model_options
from tmas.cli.outcome import drive, finish, live_options
from tmas.lifecycle.history import saved_state
from tmas.llm.model_files import ModelFileError
from tmas.storage.run_registry import UnknownRunError


@model_options(  # what a resume corrects: no default, no environment variable
    "model", "base_url", "role_model", "role_base_url", "n_ctx", "engine_arg",
    "gpu_memory_utilization", "tensor_parallel_size", "pipeline_parallel_size",
    model={"help": "continue with this main model instead (a corrected name)", "envvar": None},
    base_url={"help": "continue against this endpoint instead (a moved server)", "envvar": None},
    n_ctx={"default": None, "help": "continue with this context window (local engine)"},
)  # fmt: skip
def resume(
    run_id: str,
    db: DbOption = None,
    max_concurrency: ConcurrencyOption = None,
    quiet: bool = False,
    stream: StreamOption = False,
    review: ReviewOption = False,
    as_json: JsonOption = False,
    *,
    models: ModelOptions,
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
        served = models.base_url and models.model  # a server that serves its models
        if not state.get("stop_reason") and not served:  # a finished run is shown
            require_rebuildable(
                record,
                f"tmas.resume({run_id!r}, llm=MODEL)",
                " (or here, with --base-url and --model of a server that serves it)",
            )
        try:
            settings, backend = models.corrections()
            if settings is not None or backend is not None:  # its roles must know them
                checked_router(manager.plan_of(record).revised(settings, backend=backend))
        except (ValueError, ModelFileError) as exc:
            fail(error_line(exc))
            return
        outcome = drive(
            lambda: manager.resume(
                run_id,
                show_progress=not quiet,
                max_concurrency=max_concurrency,
                settings=settings,
                backend=backend,
                **live_options(stream, review),
            ),
            run_id,
            manager,
        )
        finish(outcome, as_json)
