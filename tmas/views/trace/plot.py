"""A small inline SVG line plot of per-iteration shares (values between 0 and 1)."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 420, 190
LEFT, RIGHT, TOP, BOTTOM = 40, 130, 14, 30


@dataclass(frozen=True)
class Series:
    """One line: its label, colour, dash pattern and one value (or None) per iteration."""

    label: str
    values: list[float | None]
    color: str = "#1f77b4"
    dash: str = ""


def _x(position: int, count: int) -> float:
    span = WIDTH - LEFT - RIGHT
    return LEFT + (span / 2 if count == 1 else span * position / (count - 1))


def _y(value: float) -> float:
    return TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - min(max(value, 0.0), 1.0))


def _segments(values: list[float | None], count: int) -> list[list[tuple[float, float]]]:
    """Runs of consecutive known points (a None breaks the line)."""
    segments: list[list[tuple[float, float]]] = [[]]
    for position, value in enumerate(values):
        if value is None:
            segments.append([])
        else:
            segments[-1].append((_x(position, count), _y(value)))
    return [s for s in segments if s]


def _axes(iterations: list[int]) -> list[str]:
    parts = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = _y(tick)
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
            f'stroke="#ddd" stroke-width="1"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>'
        )
    for position, iteration in enumerate(iterations):
        x = _x(position, len(iterations))
        parts.append(
            f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{iteration}</text>'
        )
    parts.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{HEIGHT - 2}" '
        f'text-anchor="middle">iteration</text>'
    )
    return parts


def _line(series: Series, iterations: list[int], row: int) -> list[str]:
    count = len(iterations)
    dash = f' stroke-dasharray="{escape(series.dash)}"' if series.dash else ""
    color = escape(series.color)
    parts = []
    for segment in _segments(series.values, count):
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in segment)
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2"{dash}/>'
        )
    for position, value in enumerate(series.values):
        if value is not None:
            x, y = _x(position, count), _y(value)
            tip = f"{series.label}, iteration {iterations[position]}: {value:.2f}"
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{color}">'
                f"<title>{escape(tip)}</title></circle>"
            )
    legend_y = TOP + 8 + 18 * row
    legend_x = WIDTH - RIGHT + 12
    parts.append(
        f'<line x1="{legend_x}" y1="{legend_y}" x2="{legend_x + 22}" y2="{legend_y}" '
        f'stroke="{color}" stroke-width="2"{dash}/>'
        f'<text x="{legend_x + 28}" y="{legend_y + 4}">{escape(series.label)}</text>'
    )
    return parts


def svg_plot(iterations: list[int], series: list[Series], title: str = "") -> str:
    """An SVG plot of ``series`` (one value per entry of ``iterations``) on a 0..1 axis; a
    series with no known value is only named in the legend. Empty string when there is
    nothing to plot.

    Example:
        >>> svg = svg_plot([1, 2], [Series("agreement", [0.5, 1.0]), Series("x", [None, None])])
        >>> svg.startswith("<svg") and svg.count("<polyline") == 1 and "x: no data" in svg
        True
        >>> svg_plot([], [])
        ''
    """
    shown = [s for s in series if any(v is not None for v in s.values)]
    if not iterations or not shown:
        return ""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{WIDTH}" '
        f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" font-size="11" font-family="sans-serif">',
        f"<title>{escape(title)}</title>",
        *_axes(iterations),
    ]
    for row, one in enumerate(shown):
        parts.extend(_line(one, iterations, row))
    for row, one in enumerate((s for s in series if s not in shown), start=len(shown)):
        parts.append(
            f'<text x="{WIDTH - RIGHT + 12}" y="{TOP + 12 + 18 * row}" fill="#888">'
            f"{escape(one.label)}: no data</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
