"""Counters of what the engine computed and what it reused, for benchmarks and diagnostics."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class EngineStats:
    """Totals since the engine started; ``snapshot()`` adds the derived rates.

    Prefill tokens are prompt tokens computed; cached tokens are prompt tokens copied from the
    KV cache instead. Decode speed counts the steps that held no prompt token.
    ``decode_seconds`` is the time inside ``llama_decode``; ``step_seconds`` adds the
    engine's own work around it (filling the batch, sampling, stop checks).
    ``decode_widths`` maps a decode-only step's width (sequences) to [steps, seconds].

    Example:
        >>> stats = EngineStats()
        >>> stats.admitted(100, 75); stats.step(4, 0, 0.5); stats.step(0, 25, 0.25)
        >>> snap = stats.snapshot()
        >>> snap["prefix_hit_rate"], snap["decode_tokens_per_s"], snap["prefill_tokens_per_s"]
        (0.75, 8.0, 100.0)
    """

    requests: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    prefill_tokens: int = 0
    decode_tokens: int = 0
    output_tokens: int = 0
    steps: int = 0
    decode_seconds: float = 0.0
    decode_only_tokens: int = 0
    decode_only_seconds: float = 0.0
    prefill_step_seconds: float = 0.0
    max_batch_sequences: int = 0
    step_seconds: float = 0.0
    decode_widths: dict[int, list[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reset(self) -> None:
        """Start counting again (a benchmark's timed part)."""
        with self._lock:
            fresh = EngineStats()
            for name, value in vars(fresh).items():
                if not name.startswith("_"):
                    setattr(self, name, value)

    def admitted(self, prompt_tokens: int, cached_tokens: int) -> None:
        with self._lock:
            self.requests += 1
            self.prompt_tokens += prompt_tokens
            self.cached_tokens += cached_tokens

    def step(self, decode_tokens: int, prefill_tokens: int, seconds: float) -> None:
        with self._lock:
            self.steps += 1
            self.decode_tokens += decode_tokens
            self.prefill_tokens += prefill_tokens
            self.decode_seconds += seconds
            self.max_batch_sequences = max(self.max_batch_sequences, decode_tokens)
            if prefill_tokens:
                self.prefill_step_seconds += seconds
            else:
                self.decode_only_tokens += decode_tokens
                self.decode_only_seconds += seconds
                steps_and_seconds = self.decode_widths.setdefault(decode_tokens, [0, 0.0])
                steps_and_seconds[0] += 1
                steps_and_seconds[1] += seconds

    def busy(self, seconds: float) -> None:
        """A whole step: batch filling, ``llama_decode``, sampling and stop checks."""
        with self._lock:
            self.step_seconds += seconds

    def finished(self, output_tokens: int) -> None:
        with self._lock:
            self.output_tokens += output_tokens

    def snapshot(self) -> dict[str, Any]:
        """The counters and the rates derived from them."""
        with self._lock:
            found = {k: v for k, v in vars(self).items() if not k.startswith("_")}
            found["decode_widths"] = {k: list(v) for k, v in sorted(self.decode_widths.items())}
        found["prefix_hit_rate"] = _ratio(found["cached_tokens"], found["prompt_tokens"])
        found["decode_tokens_per_s"] = _ratio(
            found["decode_only_tokens"], found["decode_only_seconds"]
        )
        found["prefill_tokens_per_s"] = _ratio(
            found["prefill_tokens"], found["prefill_step_seconds"]
        )
        return found


def _ratio(part: float, whole: float) -> float:
    return round(part / whole, 4) if whole else 0.0
