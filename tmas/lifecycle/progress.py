"""Live progress of a run: iteration, stage, LLM calls done/total and tokens so far."""

from __future__ import annotations

import sys
from collections.abc import Collection
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from tmas.graphs.estimate import CallEstimate

STAGES = {
    "start_iteration": "planning",
    "solve": "solving",
    "verify": "verifying",
    "summarize": "summarizing",
    "extract_experience": "reflecting",
    "extract_guideline": "reflecting",
    "update_banks": "updating banks",
    "record_iteration": "voting",
}


class ProgressTracker:
    """Counts what a run's stream reports; knows nothing about how it is shown.

    ``total_calls`` is a :class:`~tmas.graphs.estimate.CallEstimate` (shown as "<=N" when it
    is a bound, "~N" when a guess) or a plain number. ``pipelines`` names the pipeline nodes
    of a run streamed with ``subgraphs=True``: their own updates repeat what their body's
    nodes reported already, so their calls are not counted twice.

    Example:
        >>> t = ProgressTracker(total_calls=10, max_iterations=2)
        >>> t.observe("updates", {"solve": {"usage": {"solver": {"calls": 1,
        ...     "input_tokens": 5, "output_tokens": 7}}}})
        >>> t.calls, t.tokens
        (1, 12)
    """

    def __init__(
        self,
        total_calls: CallEstimate | int,
        max_iterations: int,
        state: dict | None = None,
        pipelines: Collection[str] = (),
    ) -> None:
        state = state or {}
        self.pipelines = frozenset(pipelines)
        usage = state.get("usage", {}) or {}
        if not isinstance(total_calls, CallEstimate):
            total_calls = CallEstimate(total_calls)
        self.total_calls = total_calls.total
        self.total_text = str(total_calls)
        self.max_iterations = max_iterations
        self.iteration = int(state.get("iteration", 0) or 0)
        self.calls = sum(u.get("calls", 0) for u in usage.values())
        self.tokens = sum(
            u.get("input_tokens", 0) + u.get("output_tokens", 0) for u in usage.values()
        )
        self.stage = "starting"
        self.last_answer: str | None = state.get("final_answer")

    def observe(self, mode: str, chunk: Any, namespace: tuple[str, ...] = ()) -> None:
        """Update the counters from one ``(mode, chunk)`` of ``graph.stream`` (from the
        subgraph at ``namespace`` when streamed with ``subgraphs=True``)."""
        if mode == "tasks" and isinstance(chunk, dict) and "input" in chunk:
            self.stage = STAGES.get(chunk.get("name", ""), self.stage)
            return
        if mode != "updates" or not isinstance(chunk, dict):
            return
        for node, update in chunk.items():
            if not isinstance(update, dict):
                continue
            if not namespace and node in self.pipelines:
                continue  # a chain's output: its nodes' calls were counted as they came
            for usage in (update.get("usage") or {}).values():
                self.calls += usage.get("calls", 0)
                self.tokens += usage.get("input_tokens", 0) + usage.get("output_tokens", 0)
            if "iteration" in update:
                self.iteration = update["iteration"]
            if update.get("final_answer") is not None:
                self.last_answer = update["final_answer"]

    def line(self) -> str:
        """One status line.

        Example:
            >>> ProgressTracker(10, 3).line()
            'iteration 0/3 | starting | calls 0/10 | tokens 0'
        """
        return (
            f"iteration {self.iteration}/{self.max_iterations} | {self.stage} | "
            f"calls {self.calls}/{self.total_text} | tokens {self.tokens:,}"
        )


class ProgressDisplay:
    """Shows a ProgressTracker: a live bar on a terminal, one line per change otherwise."""

    def __init__(self, tracker: ProgressTracker, *, enabled: bool = True) -> None:
        self.tracker = tracker
        self.enabled = enabled
        self.console = Console(stderr=True)
        self.live = enabled and sys.stderr.isatty()
        self._last_line = ""
        self._progress: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> ProgressDisplay:
        if self.live:
            self._progress = Progress(
                TextColumn("[bold]it {task.fields[iteration]}[/]"),
                TextColumn("{task.fields[stage]:<22}"),
                BarColumn(),
                TextColumn("{task.completed:.0f}/{task.fields[total]} calls"),
                TextColumn("{task.fields[tokens]} tokens"),
                TimeElapsedColumn(),
                console=self.console,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(
                "run", total=self.tracker.total_calls, **self._fields()
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(None, None, None)

    def _fields(self) -> dict[str, Any]:
        t = self.tracker
        return {
            "iteration": f"{t.iteration}/{t.max_iterations}",
            "stage": t.stage,
            "tokens": f"{t.tokens:,}",
            "total": t.total_text,
        }

    def observe(self, mode: str, chunk: Any, namespace: tuple[str, ...] = ()) -> None:
        """Feed one stream item (of the subgraph at ``namespace``) and refresh what is shown."""
        self.tracker.observe(mode, chunk, namespace)
        if not self.enabled:
            return
        if self._progress is not None:
            self._progress.update(self._task, completed=self.tracker.calls, **self._fields())
            return
        line = self.tracker.line()
        stage_key = line.split(" | calls")[0]
        if stage_key != self._last_line:
            self._last_line = stage_key
            self.console.print(line, markup=False, highlight=False)
