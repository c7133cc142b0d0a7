"""The latent traces of running chains, in process memory (never in a checkpoint: a trace is
megabytes of KV cache). A node asks for the trace its run's state describes; when the process
does not hold it (a resumed run, another process) it is rebuilt from the state's segments,
which is deterministic, so a resumed run reads the same cache as an uninterrupted one.

A run keeps one trace, that of its current iteration; at most ``capacity`` runs keep theirs,
the least recently used dropped first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from tmas.llm.hf.latent_trace import LatentTrace, Segment, base_weights


class TraceStore:
    """Traces by run (thread id) and iteration.

    Example:
        >>> store = TraceStore(capacity=2)
        >>> store.rebuilt_segments, len(store)
        (0, 0)
    """

    def __init__(self, capacity: int = 8) -> None:
        self.capacity = capacity
        self._traces: OrderedDict[str, tuple[int, LatentTrace]] = OrderedDict()
        self._lock = threading.Lock()
        self.rebuilt_segments = 0
        """Segments recomputed because the process did not hold their trace."""

    def __len__(self) -> int:
        return len(self._traces)

    def trace_for(self, run: str, iteration: int, model: Any, segments: list[Segment]):
        """The trace of ``run``'s ``iteration`` holding exactly ``segments`` on ``model``
        (rebuilt when the one held differs, or is of an earlier iteration).

        Example (with ``tmas[train]``)::

            trace = TRACES.trace_for("run-1", 1, model, segments)
        """
        with self._lock:
            held = self._traces.pop(run, None)
        trace = held[1] if held is not None and held[0] == iteration else None
        if trace is None or trace.model is not model or trace.segments != segments:
            trace = LatentTrace(model)
            with base_weights(model):
                for segment in segments:
                    trace.add(segment)
            self.rebuilt_segments += len(segments)
        with self._lock:
            self._traces[run] = (iteration, trace)
            while len(self._traces) > self.capacity:
                self._traces.popitem(last=False)
        return trace

    def clear(self) -> None:
        """Forget every trace (as a new process would start).

        Example:
            >>> TraceStore().clear()
        """
        with self._lock:
            self._traces.clear()


TRACES = TraceStore()
