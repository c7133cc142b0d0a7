"""What the command-line modules share: consoles, common options, failing with a message,
opening the run database."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from tmas.checkpoint import StorageError, default_db_path
from tmas.runner import RunManager
from tmas.storage import is_database_url, open_storage

out = Console()
err = Console(stderr=True)

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="TMAS_DB",
        help="run database: SQLite path or postgresql:// URL ($TMAS_HOME/runs.sqlite)",
    ),
]
ConcurrencyOption = Annotated[int, typer.Option(min=1, help="parallel LLM calls at most")]
JsonOption = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
StreamOption = Annotated[
    bool, typer.Option("--stream", help="print each candidate, verdict and bank item live")
]
ReviewOption = Annotated[
    bool, typer.Option("--review", help="pause after each iteration to inspect or edit banks")
]

# Options shared by the commands that run topologies (solve, eval).
GraphOption = Annotated[str, typer.Option(help="bundled topology name or spec file")]
PluginOption = Annotated[list[str], typer.Option(help="module registering node types")]
CandidatesOption = Annotated[int | None, typer.Option("-n", "--candidates", help="N solutions")]
VerificationsOption = Annotated[int | None, typer.Option("-m", "--verifications", help="M checks")]
IterationsOption = Annotated[int | None, typer.Option("-t", "--iterations")]
MaxTokensOption = Annotated[int | None, typer.Option(help="solver answer length limit")]
BackendOption = Annotated[str, typer.Option(help="llamacpp | openai | vllm")]
ModelOption = Annotated[
    str | None, typer.Option(help="GGUF path, qwen or smollm2; or a served model name")
]
BaseUrlOption = Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")]
RoleModelOption = Annotated[list[str], typer.Option(help="ROLE=MODEL (repeatable)")]
RoleBaseUrlOption = Annotated[list[str], typer.Option(help="ROLE=URL (repeatable)")]
NCtxOption = Annotated[int, typer.Option(help="context window of the embedded model")]
ThreadsOption = Annotated[int | None, typer.Option(help="CPU threads of the embedded model")]
SetOption = Annotated[
    list[str], typer.Option("--set", help="KEY=VALUE for any config field (repeatable)")
]


def fail(message: str, code: int = 2) -> None:
    """Print an error and exit non-zero."""
    err.print(f"[red]error:[/] {escape(message)}", soft_wrap=True)
    raise typer.Exit(code)


def open_manager(db: str | None, *, create: bool = True) -> RunManager:
    """The run manager on ``db``; commands that only read refuse a SQLite file that is missing."""
    target = db if is_database_url(db) else Path(db or default_db_path())
    if not create and isinstance(target, Path) and not target.exists():
        fail(f"no run database at {target}")
    try:
        return RunManager(open_storage(target))
    except StorageError as exc:
        fail(str(exc))
        raise  # unreachable
