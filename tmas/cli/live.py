"""What ``--stream`` prints and how ``--review`` talks to a person at the terminal."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from tmas.lifecycle.review import BankEditError, banks_as_json, banks_from_json
from tmas.nodes.events import TEXT_LIMIT, describe_event
from tmas.terminal import plain


def event_printer(console: Console) -> Callable[[dict[str, Any]], None]:
    """A sink for ``RunManager(..., on_event=...)`` printing one line per event."""

    def show(event: dict[str, Any]) -> None:
        console.print(describe_event(event), markup=False, highlight=False, soft_wrap=True)

    return show


def _edit_in_editor(text: str) -> str:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        handle.write(text)
    path = Path(handle.name)
    try:
        subprocess.run([*shlex.split(editor), str(path)], check=True)
        return path.read_text(encoding="utf-8")
    finally:
        path.unlink(missing_ok=True)


def terminal_reviewer(
    console: Console,
    ask: Callable[[str], str] | None = None,
    edit: Callable[[str], str] = _edit_in_editor,
) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """A ``review`` callback: show the banks after each iteration and ask whether to go on,
    edit them (in ``$VISUAL``/``$EDITOR``, as JSON) or stop (the run stays paused)."""
    ask = ask or (lambda question: typer.prompt(question, default="c", show_default=False))

    def review(state: dict[str, Any]) -> dict[str, Any] | None:
        iteration = state.get("iteration", 0)
        console.print(f"iteration {iteration} done; banks now:", markup=False)
        for name in ("experience_bank", "guideline_bank"):
            items = state.get(name, [])
            console.print(f"  {name} ({len(items)}):", markup=False)
            for item in items:
                console.print(f"    {item['id']}: {plain(item['text'], TEXT_LIMIT)}", markup=False)
        while True:
            try:
                choice = ask("[c]ontinue, [e]dit the banks, [s]top here").strip().lower()
            except (EOFError, typer.Abort):
                choice = "s"
            if choice in ("", "c"):
                return {}
            if choice == "s":
                return None
            if choice == "e":
                try:
                    return banks_from_json(edit(banks_as_json(state)), iteration)
                except (BankEditError, OSError, subprocess.CalledProcessError) as exc:
                    console.print(f"banks unchanged: {plain(exc, 300)}", markup=False)

    return review
