"""``tmas memory``: list, show, prune, export and import the lifelong memories kept in a run
database (docs/memory.md)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from tmas.cli.common import DbOption, fail, out
from tmas.cli.database import open_database
from tmas.memory.lifelong import LifelongMemory, LifelongMemoryError, namespaces
from tmas.terminal import plain

memory_app = typer.Typer(
    no_args_is_help=True,
    help="Lifelong memories across problems: list, show, prune, export, import.",
)
NameArgument = Annotated[str, typer.Argument(help="the memory's name (as given to --memory)")]


@memory_app.command("ls")
def list_memories(db: DbOption = None) -> None:
    """List the memories: name, items of each kind, reinforcements and uses."""
    table = Table("memory", "experiences", "guidelines", "hits", "uses")
    with open_database(db, create=False) as storage:
        store = storage.store_reader
        for name in namespaces(store):
            items = LifelongMemory(store, name).items()
            kinds = Counter(item["kind"] for item in items)
            table.add_row(
                name, str(kinds["experience"]), str(kinds["guideline"]),
                str(sum(i["hits"] for i in items)), str(sum(i["uses"] for i in items)),
            )  # fmt: skip
    out.print(table)


@memory_app.command("show")
def show(
    name: NameArgument,
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="every item as JSON")] = False,
) -> None:
    """Print a memory's items with their provenance (run, iteration, candidate, score)."""
    with open_database(db, create=False) as storage:
        items = _existing(storage.store_reader, name).items()
    if as_json:
        out.print_json(json.dumps(items))
        return
    table = Table("id", "kind", "hits", "uses", "score", "from", "text")
    for item in items:
        source = item.get("provenance") or {}
        score = item.get("score")
        table.add_row(
            item["id"], f"{item['kind']}/{item.get('type')}", str(item["hits"]),
            str(item["uses"]), "-" if score is None else f"{score:.2f}",
            f"{source.get('run_id', '?')} it {source.get('iteration', '?')} "
            f"c {source.get('candidate', '?')}",
            plain(item["text"], 120),
        )  # fmt: skip
    out.print(table)


@memory_app.command("prune")
def prune(
    name: NameArgument,
    keep: Annotated[int | None, typer.Option(min=0, help="keep at most this many items")] = None,
    older_than_days: Annotated[
        float | None, typer.Option(min=0.0, help="drop items not made or used for this long")
    ] = None,
    min_hits: Annotated[int, typer.Option(min=0, help="drop items reinforced less")] = 0,
    db: DbOption = None,
) -> None:
    """Delete the items worth keeping least (least reinforced and used, oldest)."""
    if keep is None and older_than_days is None and min_hits == 0:
        fail("say what to prune: --keep N, --older-than-days D or --min-hits H")
    with open_database(db, create=False, for_writing=True) as storage:
        memory = _existing(storage.store(), name)
        older = None if older_than_days is None else older_than_days * 86_400
        gone = memory.prune(keep=keep, older_than_s=older, min_hits=min_hits)
        left = len(memory.items())
    out.print(f"{name}: {gone} items deleted, {left} kept", markup=False)


@memory_app.command("export")
def export(
    name: NameArgument,
    out_file: Annotated[Path, typer.Option("--out", help="a JSONL file to write")],
    db: DbOption = None,
) -> None:
    """Write a memory's items, one JSON object per line."""
    with open_database(db, create=False) as storage:
        items = _existing(storage.store_reader, name).items()
    try:
        out_file.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {out_file}: {exc.strerror or exc}")
    out.print(f"{len(items)} items of {name} written to {out_file}", markup=False)


@memory_app.command("import")
def import_items(
    name: NameArgument,
    in_file: Annotated[Path, typer.Argument(help="a JSONL file from tmas memory export")],
    db: DbOption = None,
) -> None:
    """Add exported items to a memory (created if new); an item with the same id is replaced."""
    try:
        lines = in_file.read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"cannot read {in_file}: {exc}")
        return
    if not all(isinstance(row, dict) for row in rows):
        fail(f"{in_file}: every line must be a JSON object (a memory item)")
    with open_database(db, for_writing=True) as storage:
        memory = LifelongMemory(storage.store(), name)
        try:
            _check_rows(memory, rows)
            count = memory.import_items(rows)
        except LifelongMemoryError as exc:
            fail(f"{in_file}: {exc}")
            return
    out.print(f"{count} items imported into {name}", markup=False)


def _check_rows(memory: LifelongMemory, rows: list[dict]) -> None:
    """Refuse the whole file before writing anything when one row is not an item."""
    from langgraph.store.memory import InMemoryStore

    LifelongMemory(InMemoryStore(), memory.name).import_items(rows)


def _existing(store: object, name: str) -> LifelongMemory:
    try:
        return LifelongMemory(store, name).require()  # type: ignore[arg-type]
    except LifelongMemoryError as exc:
        fail(str(exc))
        raise  # unreachable
