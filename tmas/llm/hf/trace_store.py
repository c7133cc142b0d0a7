"""The latent traces of running chains, in process memory (never in a checkpoint: a trace is
megabytes of KV cache). A node asks for the trace its run's state describes; when the process
does not hold it (a resumed run, another process) it is rebuilt from the state's segments,
which is deterministic, so a resumed run reads the same cache as an uninterrupted one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from tmas.llm.hf.latent_trace import LatentTrace, Segment, base_weights


class TraceStore:
    """At most ``capacity`` traces, the least recently used dropped first.

    Example (with ``tmas[train]``)::

        trace = TRACES.trace_for("run-1", model, segments)
    """

    def __init__(self, capacity: int = 8) -> None:
        self.capacity = capacity
        self._traces: OrderedDict[str, LatentTrace] = OrderedDict()
        self._lock = threading.Lock()
        self.rebuilt_segments = 0
        """Segments recomputed because the process did not hold their trace (for tests)."""

    def trace_for(self, key: str, model: Any, segments: list[Segment]) -> LatentTrace:
        """The trace of ``key`` holding exactly ``segments`` (rebuilt when it does not)."""
        with self._lock:
            trace = self._traces.pop(key, None)
        if trace is None or trace.model is not model or trace.segments != segments:
            trace = LatentTrace(model)
            with base_weights(model):
                for segment in segments:
                    trace.add(segment)
            self.rebuilt_segments += len(segments)
        with self._lock:
            self._traces[key] = trace
            while len(self._traces) > self.capacity:
                self._traces.popitem(last=False)
        return trace

    def discard(self, key: str) -> None:
        """Forget the trace of ``key`` (its chain is over)."""
        with self._lock:
            self._traces.pop(key, None)

    def clear(self) -> None:
        """Forget every trace (as a new process would start)."""
        with self._lock:
            self._traces.clear()


TRACES = TraceStore()
