"""Per-request latencies for the scripted servers: fixed, or drawn from a seeded log-normal.

A drawn latency depends on the request alone (its role and seed), not on when it arrives, so
two runs of the same topology meet the same latencies however their calls are scheduled, and
a benchmark can compute the ideal schedules from the latencies the server drew.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class LogNormalLatency:
    """``median_s * exp(sigma * z)`` with ``z`` standard normal, drawn from (seed, role,
    request seed); ``sigma=0`` is a fixed latency.

    Example:
        >>> model = LogNormalLatency(median_s=0.5, sigma=1.0, seed=7)
        >>> model.draw("solver", "123") == model.draw("solver", "123")
        True
        >>> LogNormalLatency(median_s=0.5, sigma=0.0).draw("verifier", "9")
        0.5
    """

    median_s: float
    sigma: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.median_s < 0 or self.sigma < 0:
            raise ValueError("a latency's median and sigma must be >= 0")

    def draw(self, role: str | None, request_seed: str) -> float:
        """The latency of one request."""
        if self.sigma == 0:
            return self.median_s
        z = random.Random(f"{self.seed}:{role}:{request_seed}").gauss(0.0, 1.0)
        return self.median_s * math.exp(self.sigma * z)


def latency_model(latency: float | LogNormalLatency) -> LogNormalLatency:
    """A latency model from a fixed number of seconds or a model.

    Example:
        >>> latency_model(0.25).draw("solver", "1")
        0.25
    """
    if isinstance(latency, LogNormalLatency):
        return latency
    if latency < 0:
        raise ValueError("latency_s must be >= 0")
    return LogNormalLatency(median_s=float(latency))
