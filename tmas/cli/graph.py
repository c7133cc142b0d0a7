"""``tmas graph``: draw one topology as Mermaid, Graphviz DOT, plain text or a PNG picture."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from tmas.cli.common import PluginOption, err, error_line, fail
from tmas.cli.inputs import load_topology
from tmas.graphs.spec import GraphSpec
from tmas.views.diagram import spec_to_mermaid
from tmas.views.diagram_ascii import spec_to_ascii
from tmas.views.diagram_dot import spec_to_dot
from tmas.views.diagram_png import DiagramError, spec_to_png

TEXT_FORMATS: dict[str, Callable[[GraphSpec], str]] = {
    "mermaid": spec_to_mermaid,
    "dot": spec_to_dot,
    "ascii": spec_to_ascii,
}
FORMATS = (*TEXT_FORMATS, "png")


def render(spec: GraphSpec, fmt: str) -> str | bytes:
    """The diagram of ``spec`` in ``fmt`` (text, or PNG bytes); ValueError for another format.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> render(load_bundled("rsa"), "dot").splitlines()[0]
        'digraph "rsa" {'
    """
    if fmt == "png":
        return spec_to_png(spec)
    if fmt not in TEXT_FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    return TEXT_FORMATS[fmt](spec)


def graph(
    name_or_path: Annotated[str, typer.Argument(help="bundled topology name or spec file")],
    format: Annotated[
        str, typer.Option("--format", "-f", help="mermaid | dot | ascii | png")
    ] = "mermaid",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="write here (required for png)")
    ] = None,
    plugin: PluginOption = [],  # noqa: B006
) -> None:
    """Draw a topology (bundled name or spec file): fan-outs, loops and their exits shown."""
    if format not in FORMATS:
        fail(f"unknown format {format!r}; choose one of: {', '.join(FORMATS)}")
    if format == "png" and out is None:
        fail("--format png writes a binary file: give it with --out FILE")
    try:
        spec = load_topology(name_or_path, plugin)
    except ValueError as exc:  # a bad spec (SpecError), or a plugin that cannot be imported
        fail(error_line(exc))
        return
    try:
        drawing = render(spec, format)
    except DiagramError as exc:
        fail(str(exc), 1)
        return
    if out is None:
        typer.echo(drawing, nl=False)
        return
    try:
        if isinstance(drawing, bytes):
            out.write_bytes(drawing)
        else:
            out.write_text(drawing, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {out}: {exc}", 1)
    err.print(f"wrote {out} ({format})", markup=False, highlight=False)
