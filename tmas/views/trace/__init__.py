"""The reasoning-flow viewer: a run's iterations, candidates, checks and banks as one HTML page.

:func:`collect_trace` reads a run back from its checkpoints (without writing anything);
:func:`render_page` turns one or more traces into a self-contained page.
"""

from tmas.views.trace.collect import (
    CandidateTrace,
    IterationTrace,
    RunTrace,
    collect_iterations,
    collect_trace,
)
from tmas.views.trace.html import render_page, render_run

__all__ = [
    "CandidateTrace",
    "IterationTrace",
    "RunTrace",
    "collect_iterations",
    "collect_trace",
    "render_page",
    "render_run",
]
