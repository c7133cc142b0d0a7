"""``tmas graph``: every bundled topology drawn as Mermaid, DOT and plain text matches its
snapshot, fan-outs and loops are visible as such, PNGs are drawn offline, and bad input is
refused with one line.

After an intended change to a drawing, regenerate the snapshots and review the diff:

    TMAS_UPDATE_SNAPSHOTS=1 python -m pytest tests/graphs/test_diagram_formats.py
"""

from __future__ import annotations

import difflib
import os
import stat
import struct
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tmas.cli import app
from tmas.cli.graph import TEXT_FORMATS
from tmas.graphs.bundled import bundled_dir, bundled_names, load_bundled
from tmas.graphs.pipeline import bodies
from tmas.views.diagram_ascii import spec_to_ascii
from tmas.views.diagram_dot import spec_to_dot
from tmas.views.diagram_layout import layers, spec_arcs
from tmas.views.diagram_png import ENGINE_ENV, DiagramError, spec_to_png

SNAPSHOTS = Path(__file__).parent / "snapshots"
EXTENSIONS = {"mermaid": "mmd", "dot": "dot", "ascii": "txt"}
UPDATE_ENV = "TMAS_UPDATE_SNAPSHOTS"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def invoke(*args: str, engine: str = "matplotlib") -> Result:
    return CliRunner().invoke(app, ["graph", *args], env={ENGINE_ENV: engine})


# ---- snapshots ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(EXTENSIONS))
@pytest.mark.parametrize("name", bundled_names())
def test_drawing_matches_its_snapshot(name: str, fmt: str) -> None:
    text = TEXT_FORMATS[fmt](load_bundled(name))
    path = SNAPSHOTS / f"{name}.{EXTENSIONS[fmt]}"
    if os.environ.get(UPDATE_ENV):
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
    regenerate = f"{UPDATE_ENV}=1 python -m pytest tests/graphs/test_diagram_formats.py"
    if not path.exists():
        pytest.fail(f"no snapshot {path.name}; create it with: {regenerate}", pytrace=False)
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True),
            text.splitlines(keepends=True),
            f"snapshots/{path.name}",
            f"{fmt} drawing of {name} now",
        )
        pytest.fail(
            f"the {fmt} drawing of {name} differs from its snapshot:\n{''.join(diff)}\n"
            f"if the change is intended, regenerate with: {regenerate}",
            pytrace=False,
        )


def test_every_snapshot_belongs_to_a_bundled_topology() -> None:
    expected = {f"{name}.{ext}" for name in bundled_names() for ext in EXTENSIONS.values()}
    stale = sorted(p.name for p in SNAPSHOTS.iterdir() if p.name not in expected)
    assert not stale, f"snapshots of no bundled topology (delete them): {stale}"


# ---- fan-outs and loops are visible ---------------------------------------------------------


def test_dot_shows_fanouts_loops_and_round_ends() -> None:
    text = spec_to_dot(load_bundled("tmas_barrier"))
    assert text.startswith('digraph "tmas_barrier" {\n') and text.endswith("}\n")
    fanout = '"start_iteration" -> "solve" [style=dashed, label="fan-out: solver_tasks, N tasks"];'
    assert fanout in text
    assert '"solve" [label="solve", peripheries=2];' in text
    assert '"candidates_ready" [label="candidates_ready: join"];' in text  # not fanned
    assert '"solve" -> "candidates_ready";' in text  # a plain edge is solid and bare
    loop = next(
        line for line in text.splitlines() if '"record_iteration" -> "start_iteration"' in line
    )
    assert 'label="loop until not run_finished"' in loop and "constraint=false" in loop
    exit_ = next(line for line in text.splitlines() if '"record_iteration" -> "END"' in line)
    assert 'label="run_finished"' in exit_
    assert '"START" [shape=ellipse' in text and '"END" [shape=ellipse' in text


def test_ascii_shows_fanouts_loops_and_exits() -> None:
    text = spec_to_ascii(load_bundled("tmas_barrier"))
    block = text.split("\n\n")
    first = "layer 1\n  [start_iteration]\n      ==> solve  (fan-out: solver_tasks, N tasks)"
    assert first in block
    assert "  [[verify]]" in text.splitlines()
    assert "      ==> extract_guideline  (fan-out: reflection_tasks, N tasks)" in text
    assert "      <-- loop until not run_finished: back to start_iteration" in text
    assert "      --> EXIT when run_finished: END" in text
    assert block[-1] == "layer 11\n  (END)\n"
    assert "==> worker  (fan-out x3)" in spec_to_ascii(load_bundled("delm"))


@pytest.mark.parametrize("name", bundled_names())
def test_every_arc_is_drawn_once_and_ascii_is_pure(name: str) -> None:
    spec = load_bundled(name)
    expected = sum(2 if e.until else len(e.targets) for e in spec.edges)
    inner = sum(2 if e.until else len(e.targets) for b in bodies(spec).values() for e in b.edges)
    dot = spec_to_dot(spec)
    assert sum(1 for line in dot.splitlines() if " -> " in line) == expected + inner
    text = spec_to_ascii(spec)
    assert text.isascii()
    markers = ("      -->", "      ==>", "      <--")
    assert sum(1 for line in text.splitlines() if line.startswith(markers)) == expected


@pytest.mark.parametrize("name", bundled_names())
def test_layers_point_forward_except_loop_backs(name: str) -> None:
    spec = load_bundled(name)
    depth = {node: i for i, layer in enumerate(layers(spec)) for node in layer}
    assert depth["START"] == 0 and depth["END"] == len(layers(spec)) - 1
    for arc in spec_arcs(spec):
        forward = depth[arc.target] > depth[arc.source]
        assert forward != (arc.kind == "loop"), arc


def test_a_pipeline_is_drawn_as_a_cluster_holding_its_body() -> None:
    spec = load_bundled("tmas")
    dot = spec_to_dot(spec)
    assert "compound=true" in dot and 'subgraph "cluster_candidate" {' in dot
    assert '"candidate/solve" [label="solve", peripheries=2];' in dot
    into = '"start_iteration" -> "candidate/START" [style=dashed, '
    assert into in dot and 'lhead="cluster_candidate"' in dot
    assert '"candidate/END" -> "update_banks" [ltail="cluster_candidate"];' in dot
    text = spec_to_ascii(spec)
    assert "  [[candidate: pipeline]]" in text
    assert "      { pipeline candidate_chain: runs once per task" in text
    assert "              ==> verify  (fan-out: verification_tasks, N x M tasks)" in text
    assert "compound" not in spec_to_dot(load_bundled("tmas_barrier"))


# ---- PNG ------------------------------------------------------------------------------------


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("name", ["tmas", "delm"])
def test_cli_draws_a_png_without_graphviz(tmp_path: Path, name: str) -> None:
    target = tmp_path / f"{name}.png"
    result = invoke(name, "--format", "png", "--out", str(target))
    assert result.exit_code == 0, result.output
    data = target.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert 5_000 < len(data) < 5_000_000
    width, height = png_size(data)
    assert 200 <= width <= 4000 and 300 <= height <= 4000


def fake_dot(folder: Path, exit_code: int) -> Path:
    """A ``dot`` executable that saves its input beside itself and prints a tiny PNG."""
    script = folder / "dot"
    script.write_text(
        f"#!/bin/sh\ncat > '{folder}/input.dot'\nprintf '\\211PNG\\r\\n\\032\\nfake'\n"
        f"exit {exit_code}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder / "input.dot"


@pytest.mark.skipif(sys.platform == "win32", reason="a shell-script stand-in for Graphviz")
def test_png_uses_graphviz_when_installed_and_falls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = load_bundled("rsa")
    monkeypatch.delenv(ENGINE_ENV, raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    received = fake_dot(tmp_path, exit_code=0)
    assert spec_to_png(spec) == PNG_SIGNATURE + b"fake"
    assert received.read_text() == spec_to_dot(spec)
    assert len(spec_to_png(spec, engine="matplotlib")) > 5_000  # forced past Graphviz

    fake_dot(tmp_path, exit_code=1)
    assert len(spec_to_png(spec)) > 5_000  # auto: a failing Graphviz falls back
    with pytest.raises(DiagramError, match="Graphviz dot failed"):
        spec_to_png(spec, engine="dot")


# ---- the command line -----------------------------------------------------------------------


def test_cli_prints_text_or_writes_it(tmp_path: Path) -> None:
    result = invoke("tmas", "--format", "ascii")
    assert result.exit_code == 0 and result.stdout == spec_to_ascii(load_bundled("tmas"))
    assert invoke("rsa").stdout.startswith("flowchart TD\n")  # mermaid by default
    target = tmp_path / "rsa.dot"
    result = invoke(str(bundled_dir() / "rsa.yaml"), "-f", "dot", "-o", str(target))
    assert result.exit_code == 0 and result.stdout == ""
    assert target.read_text(encoding="utf-8") == spec_to_dot(load_bundled("rsa"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no_such_topology"], "no bundled topology 'no_such_topology'"),
        (["tmas", "--format", "png"], "--format png writes a binary file: give it with --out"),
        (["tmas", "--format", "svg"], "unknown format 'svg'; choose one of: mermaid, dot, ascii"),
        (["missing.yaml"], "no such spec file: missing.yaml"),
        (["tmas", "--plugin", "no_such_plugin"], "cannot import plugin 'no_such_plugin'"),
    ],
)
def test_cli_refuses_bad_input_with_one_line(args: list[str], message: str) -> None:
    result = invoke(*args)
    assert result.exit_code != 0
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output and result.stdout == ""


def test_cli_refuses_a_broken_spec_file_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n", encoding="utf-8")
    result = invoke(str(bad), "--format", "ascii")
    assert result.exit_code != 0
    assert "cannot parse bad.yaml" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
