"""PNG pictures of topology specs, drawn offline: Graphviz ``dot`` when it is installed, else
networkx layers drawn with matplotlib (Agg, no display and no network)."""

from __future__ import annotations

import io
import math
import os
import shutil
import subprocess
from typing import TYPE_CHECKING

from tmas.graphs.spec import END, START, GraphSpec
from tmas.views.diagram_dot import spec_to_dot
from tmas.views.diagram_layout import Arc, fanout_targets, layers, node_label, spec_arcs

if TYPE_CHECKING:
    from matplotlib.axes import Axes

ENGINE_ENV = "TMAS_DIAGRAM_ENGINE"
ENGINES = ("auto", "dot", "matplotlib")

DPI = 110
ROW = 0.95  # inches between layers
CHAR = 0.085  # inches per character of a 10 pt monospace node label
SMALL_CHAR = 0.07  # inches per character of an 8 pt arc label
LANE = 0.35  # inches between the boxes and a loop's back arc (and between two loops)
LOOP_COLOR = "#b03030"
STYLES = {
    "box": {"boxstyle": "round,pad=0.45", "fc": "#eef3fb", "ec": "#3b5b92"},
    "fan": {"boxstyle": "round,pad=0.45", "fc": "#fff4dc", "ec": "#9a6a00"},
    "end": {"boxstyle": "round,pad=0.45,rounding_size=0.9", "fc": "#e8e8e8", "ec": "#555555"},
}

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in inches
Positions = dict[str, tuple[float, float]]  # node centres in inches


class DiagramError(RuntimeError):
    """A picture could not be drawn (an unknown engine, or Graphviz failed)."""


def choose_engine(engine: str | None = None) -> str:
    """``dot`` or ``matplotlib``: ``engine``, else ``$TMAS_DIAGRAM_ENGINE``, else ``auto``, which
    takes ``dot`` when the Graphviz executable is on PATH.

    Example:
        >>> choose_engine("matplotlib")
        'matplotlib'
    """
    engine = engine or os.environ.get(ENGINE_ENV) or "auto"
    if engine not in ENGINES:
        raise DiagramError(f"unknown diagram engine {engine!r}; known: {', '.join(ENGINES)}")
    if engine == "auto":
        return "dot" if shutil.which("dot") else "matplotlib"
    return engine


def spec_to_png(spec: GraphSpec, engine: str | None = None) -> bytes:
    """The topology as PNG bytes (see ``choose_engine``); with ``auto``, a failing Graphviz
    falls back to matplotlib.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> spec_to_png(load_bundled("majority_vote"), engine="matplotlib")[:8]
        b'\\x89PNG\\r\\n\\x1a\\n'
    """
    chosen = choose_engine(engine)
    if chosen == "dot":
        try:
            return dot_to_png(spec_to_dot(spec))
        except DiagramError:
            if (engine or os.environ.get(ENGINE_ENV) or "auto") == "dot":
                raise
    return matplotlib_png(spec)


def dot_to_png(dot_text: str) -> bytes:
    """Render DOT text with the Graphviz ``dot`` executable."""
    executable = shutil.which("dot")
    if executable is None:
        raise DiagramError("the Graphviz 'dot' executable is not on PATH")
    try:
        done = subprocess.run(
            [executable, "-Tpng"], input=dot_text.encode(), capture_output=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DiagramError(f"Graphviz dot failed: {exc}") from None
    if done.returncode != 0 or not done.stdout:
        raise DiagramError(f"Graphviz dot failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def _layout(spec: GraphSpec, labels: dict[str, str]) -> tuple[Positions, float, float]:
    """Centres of the nodes in inches (layers top to bottom), and the figure's width and height."""
    layered = layers(spec)
    column = CHAR * max(len(label) for label in labels.values()) + 0.9
    across = max(len(layer) for layer in layered)
    loop_labels = [len(arc.label) for arc in spec_arcs(spec) if arc.kind == "loop"]
    lanes = LANE * len(loop_labels) + 0.1 + SMALL_CHAR * max(loop_labels, default=0)
    right = 0.3 + (lanes if loop_labels else 0.0)
    width, height = 0.3 + across * column + right, ROW * len(layered) + 0.8
    pos = {}
    for depth, layer in enumerate(layered):
        offset = 0.3 + column * (across - len(layer)) / 2
        for i, node in enumerate(layer):
            pos[node] = (offset + column * (i + 0.5), height - 0.9 - ROW * depth)
    return pos, width, height


def _border(box: Box, toward: tuple[float, float]) -> tuple[float, float]:
    """Where the segment from the box's centre to ``toward`` leaves the box."""
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    dx, dy = toward[0] - cx, toward[1] - cy
    half_w, half_h = (box[2] - box[0]) / 2 + 0.02, (box[3] - box[1]) / 2 + 0.02
    scale = min(half_w / abs(dx) if dx else math.inf, half_h / abs(dy) if dy else math.inf)
    return (cx + dx * scale, cy + dy * scale) if math.isfinite(scale) else (cx, cy)


def _draw_nodes(
    ax: Axes, spec: GraphSpec, pos: Positions, labels: dict[str, str]
) -> dict[str, Box]:
    """Draw the boxes; return their extents in inches (measured after a first draw)."""
    from matplotlib.patches import FancyBboxPatch

    fanned = fanout_targets(spec)
    texts = {}
    for node, (x, y) in pos.items():
        style = "end" if node in (START, END) else "fan" if node in fanned else "box"
        texts[node] = ax.text(
            x,
            y,
            labels[node],
            ha="center",
            va="center",
            family="monospace",
            fontsize=10,
            bbox={**STYLES[style], "lw": 1.3},
            zorder=3,
        )
    ax.figure.canvas.draw()
    to_data = ax.transData.inverted()
    boxes: dict[str, Box] = {}
    for node, text in texts.items():
        extent = text.get_bbox_patch().get_window_extent()
        (x0, y0), (x1, y1) = to_data.transform([(extent.x0, extent.y0), (extent.x1, extent.y1)])
        boxes[node] = (x0, y0, x1, y1)
        if node in fanned:  # a second border, as Graphviz draws peripheries=2
            gap = 0.045
            ax.add_patch(
                FancyBboxPatch(
                    (x0 - gap, y0 - gap),
                    x1 - x0 + 2 * gap,
                    y1 - y0 + 2 * gap,
                    boxstyle="round,pad=0,rounding_size=0.08",
                    fill=False,
                    ec=STYLES["fan"]["ec"],
                    lw=1.0,
                    zorder=2,
                )
            )
            boxes[node] = (x0 - gap, y0 - gap, x1 + gap, y1 + gap)
    return boxes


def _arc_label(
    ax: Axes, xy: tuple[float, float], text: str, color: str, ha: str = "center"
) -> None:
    ax.text(
        *xy,
        text,
        ha=ha,
        va="center",
        fontsize=8,
        color=color,
        zorder=4,
        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.9},
    )


def _draw_loop(ax: Axes, arc: Arc, boxes: dict[str, Box], lane: int) -> None:
    """A back arc in a lane right of every box it passes, with rounded corners and its label."""
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.path import Path

    src, dst = boxes[arc.source], boxes[arc.target]
    low, high = min(src[1], dst[1]), max(src[3], dst[3])
    passed = [box[2] for box in boxes.values() if box[3] >= low and box[1] <= high]
    if arc.source == arc.target:  # a small loop beside the box
        passed = [src[2]]
    x = max(passed) + LANE * (lane + 1)
    y0, y1 = (src[1] + src[3]) / 2, (dst[1] + dst[3]) / 2
    if arc.source == arc.target:
        quarter = (src[3] - src[1]) / 4
        y0, y1 = y0 - quarter, y1 + quarter
    r = math.copysign(min(0.15, abs(y1 - y0) / 2), y1 - y0)
    vertices = [(src[2], y0), (x - abs(r), y0), (x, y0), (x, y0 + r)]
    vertices += [(x, y1 - r), (x, y1), (x - abs(r), y1), (dst[2], y1)]
    codes = [Path.MOVETO, Path.LINETO, Path.CURVE3, Path.CURVE3]
    codes += [Path.LINETO, Path.CURVE3, Path.CURVE3, Path.LINETO]
    ax.add_patch(
        FancyArrowPatch(
            path=Path(vertices, codes),
            arrowstyle="-|>",
            mutation_scale=12,
            color=LOOP_COLOR,
            lw=1.3,
            zorder=1,
        )
    )
    _arc_label(ax, (x + 0.06, (y0 + y1) / 2), arc.label, LOOP_COLOR, ha="left")


def _draw_arc(ax: Axes, arc: Arc, boxes: dict[str, Box]) -> None:
    """A straight arrow between the box borders: dashed for a fan-out, labelled when it has one."""
    from matplotlib.patches import FancyArrowPatch

    src, dst = boxes[arc.source], boxes[arc.target]
    centre = {n: ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2) for n, b in boxes.items()}
    start = _border(src, centre[arc.target])
    end = _border(dst, centre[arc.source])
    color = LOOP_COLOR if arc.kind == "exit" else "#333333"
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=12,
            color=color,
            lw=1.2,
            shrinkA=0,
            shrinkB=0,
            linestyle="--" if arc.kind == "fanout" else "-",
            zorder=1,
        )
    )
    if arc.label:
        at = 0.55
        _arc_label(
            ax,
            (start[0] + at * (end[0] - start[0]), start[1] + at * (end[1] - start[1])),
            arc.label,
            color,
        )


def matplotlib_png(spec: GraphSpec) -> bytes:
    """Draw the topology with matplotlib: layers top to bottom, fan-outs dashed into
    double-bordered boxes, loop back arcs curved and labelled.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> len(matplotlib_png(load_bundled("delm"))) > 1000
        True
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels = {START: START, END: END, **{node.id: node_label(node) for node in spec.nodes}}
    pos, width, height = _layout(spec, labels)
    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    ax.text(0.3, height - 0.3, spec.name, fontsize=12, weight="bold", va="center")
    boxes = _draw_nodes(ax, spec, pos, labels)
    loops = 0
    for arc in spec_arcs(spec):
        if arc.kind == "loop":
            _draw_loop(ax, arc, boxes, loops)
            loops += 1
        else:
            _draw_arc(ax, arc, boxes)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, facecolor="white", metadata={"Software": None})
    return buffer.getvalue()
