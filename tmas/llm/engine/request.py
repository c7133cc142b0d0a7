"""One generation request: its prompt, sampling settings, stop rules, and how it reports back."""

from __future__ import annotations

import codecs
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_ids = itertools.count()


@dataclass(frozen=True)
class Sampling:
    """Per-request sampling: ``temperature`` 0 is greedy; ``seed`` None draws a random one.

    Example:
        >>> Sampling(temperature=0.0).greedy
        True
    """

    temperature: float = 0.7
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    seed: int | None = None

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0


def make_sampler(lib: Any, sampling: Sampling) -> Any:
    """A llama.cpp sampler chain for ``sampling`` (free it with ``llama_sampler_free``)."""
    chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
    if sampling.greedy:
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_greedy())
        return chain
    seed = 0xFFFFFFFF if sampling.seed is None else sampling.seed & 0xFFFFFFFF
    lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_top_k(sampling.top_k))
    lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_top_p(sampling.top_p, 1))
    lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_min_p(sampling.min_p, 1))
    lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_temp(sampling.temperature))
    lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_dist(seed))
    return chain


class StopText:
    """Turns token bytes into text, ending at the first stop string and never showing a part
    of one: text that could still become a stop string is held back until it cannot.

    Example:
        >>> text = StopText(["###"])
        >>> text.feed(b"4 #"), text.feed(b"## more"), text.text, text.stopped
        ('4 ', '', '4 ', True)
    """

    def __init__(self, stops: list[str]) -> None:
        self.stops = [s for s in stops if s]
        self.text = ""
        self.stopped = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._shown = 0

    def feed(self, data: bytes, *, final: bool = False) -> str:
        """Add bytes; return the newly visible text."""
        if self.stopped:
            return ""
        self.text += self._decoder.decode(data, final=final)
        for stop in self.stops:
            at = self.text.find(stop)
            if at >= 0:
                self.text = self.text[:at]
                self.stopped = True
        visible = len(self.text) if (self.stopped or final) else len(self.text) - self._held()
        fresh = self.text[self._shown : visible]
        self._shown = max(self._shown, visible)
        return fresh

    def _held(self) -> int:
        longest = 0
        for stop in self.stops:
            for size in range(min(len(stop) - 1, len(self.text)), 0, -1):
                if self.text.endswith(stop[:size]):
                    longest = max(longest, size)
                    break
        return longest


@dataclass
class Outcome:
    """What a finished request produced."""

    text: str
    finish_reason: str
    prompt_tokens: int
    output_tokens: int
    cached_tokens: int


@dataclass(eq=False)
class GenerationRequest:
    """A prompt waiting for, or being decoded by, the engine.

    ``listener`` receives ``("text", str)`` as text becomes visible, then exactly one of
    ``("done", Outcome)`` or ``("error", Exception)``; it is called from the engine's thread.
    """

    prompt: list[int]
    max_tokens: int
    sampling: Sampling
    listener: Callable[[tuple[str, Any]], None]
    stops: list[str] = field(default_factory=list)
    id: int = field(default_factory=lambda: next(_ids))
    cancelled: threading.Event = field(default_factory=threading.Event)

    def cancel(self) -> None:
        """Ask the engine to drop this request and free its sequence (safe from any thread)."""
        self.cancelled.set()
