"""A shared KV cache that agents extend in turn, thinking in latent steps (LatentMAS).

Each agent's prompt is prefilled over the cache the agents before it left; then it takes
``latent_steps`` steps in which the last layer's hidden state, optionally *realigned* to the
input-embedding space, is fed back as the next input embedding. The cache grows by the
agent's segment (its prompt, unless dropped, and its latent steps). A final agent reads the
whole trace and decodes text.

Positions keep counting across dropped prompts, so every cached key keeps the rotary position
it was computed at. Everything here is deterministic except sampled decoding, which draws
from its own seeded generator.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

REALIGN_RIDGE = 1e-5


@dataclass(frozen=True)
class Segment:
    """What one agent added to the trace, enough to add it again (``record()`` is JSON)."""

    agent: str
    prompt_ids: tuple[int, ...]
    latent_steps: int
    realign: bool
    keep_prompt: bool

    @property
    def length(self) -> int:
        """The cache entries this segment leaves.

        Example:
            >>> Segment("planner", (1, 2, 3), 4, True, keep_prompt=False).length
            4
        """
        return self.latent_steps + (len(self.prompt_ids) if self.keep_prompt else 0)

    def record(self) -> dict[str, Any]:
        """The segment as plain data (for the run's state).

        Example:
            >>> Segment("critic", (5, 6), 2, True, True).record()["prompt_ids"]
            [5, 6]
        """
        return {
            "agent": self.agent,
            "prompt_ids": list(self.prompt_ids),
            "latent_steps": self.latent_steps,
            "realign": self.realign,
            "keep_prompt": self.keep_prompt,
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Segment:
        """The segment a :meth:`record` describes.

        Example:
            >>> s = Segment("critic", (5,), 2, False, True)
            >>> Segment.from_record(s.record()) == s
            True
        """
        return cls(
            agent=str(data["agent"]),
            prompt_ids=tuple(int(t) for t in data["prompt_ids"]),
            latent_steps=int(data["latent_steps"]),
            realign=bool(data["realign"]),
            keep_prompt=bool(data["keep_prompt"]),
        )


_REALIGNMENTS: weakref.WeakKeyDictionary[Any, tuple[Any, Any]] = weakref.WeakKeyDictionary()


def realignment(model: Any) -> tuple[Any, Any]:
    """The matrix W = (W_out^T W_out + rI)^-1 W_out^T W_in that maps a last-layer hidden state
    into the input-embedding space, and the mean norm of the input embeddings (computed once
    per model, forgotten with it).

    Example (with ``tmas[train]``)::

        matrix, norm = realignment(model)  # (hidden, hidden) and a scalar
    """
    import torch

    key = model
    if key not in _REALIGNMENTS:
        with torch.no_grad():
            w_in = model.get_input_embeddings().weight.float()
            w_out = model.get_output_embeddings().weight.float()
            gram = w_out.T @ w_out + REALIGN_RIDGE * torch.eye(w_out.shape[1], device=w_out.device)
            matrix = torch.linalg.solve(gram, w_out.T @ w_in)
            _REALIGNMENTS[key] = (matrix, w_in.norm(dim=1).mean())
    return _REALIGNMENTS[key]


def base_weights(model: Any) -> contextlib.AbstractContextManager:
    """A context in which a PEFT model runs without its adapter (a plain model as it is):
    upstream agents are the base model, a trained adapter belongs to the final agent.

    Example:
        >>> with base_weights(object()):
        ...     pass
    """
    disable = getattr(model, "disable_adapter", None)
    return disable() if callable(disable) and hasattr(model, "peft_config") else _nothing()


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


@dataclass
class LatentTrace:
    """The shared cache of one chain of agents over a model.

    Example (with ``tmas[train]``)::

        trace = LatentTrace(model)
        trace.add(Segment("planner", tuple(ids), latent_steps=8, realign=True, keep_prompt=True))
        trace.decode(judger_ids, max_tokens=64, eos_ids={2})
    """

    model: Any
    cache: Any = None
    next_position: int = 0
    segments: list[Segment] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.cache is None:
            from transformers import DynamicCache

            self.cache = DynamicCache()

    @property
    def device(self) -> Any:
        """Where the model's weights are."""
        return self.model.get_input_embeddings().weight.device

    def length(self) -> int:
        """The entries in the cache (the sum of the segments' lengths).

        Example (with ``tmas[train]``)::

            assert trace.length() == sum(s.length for s in trace.segments)
        """
        return int(self.cache.get_seq_length())

    def forward(self, *, input_ids: Any = None, inputs_embeds: Any = None, hidden: bool = False):
        """Run the model on new tokens (or embeddings) over the cache, which keeps them; with
        ``hidden`` the output carries every layer's hidden states.

        Example (with ``tmas[train]``)::

            logits = trace.forward(input_ids=torch.tensor([[1, 2, 3]])).logits
        """
        import torch

        width = (input_ids if input_ids is not None else inputs_embeds).shape[1]
        positions = torch.arange(
            self.next_position, self.next_position + width, device=self.device
        ).unsqueeze(0)
        output = self.model(
            input_ids=input_ids,
            inputs_embeds=inputs_embeds,
            position_ids=positions,
            past_key_values=self.cache,
            use_cache=True,
            output_hidden_states=hidden,
        )
        self.next_position += width
        return output

    def latent_input(self, hidden: Any, realign: bool) -> Any:
        """The next latent step's input embedding from a last-layer hidden state: mapped into
        the input-embedding space (``realign``) or taken as it is, and in both cases rescaled
        to the mean norm of the input embeddings, as LatentMAS always does (a raw last-layer
        state is far larger than any token embedding the model was trained to read)."""
        matrix, target_norm = realignment(self.model)
        vector = hidden.float() @ matrix if realign else hidden.float()
        vector = vector * (target_norm / vector.norm(dim=-1, keepdim=True).clamp_min(1e-6))
        return vector.to(hidden.dtype)

    def add(self, segment: Segment) -> None:
        """Prefill the segment's prompt, take its latent steps, drop the prompt from the cache
        if it is not kept (later agents then see only the latent steps)."""
        import torch

        saved = self.mark()
        start = saved[0]
        try:
            ids = torch.tensor([segment.prompt_ids], device=self.device)
            with torch.no_grad():
                state = self.forward(input_ids=ids, hidden=True).hidden_states[-1][:, -1:, :]
                for _ in range(segment.latent_steps):
                    step = self.latent_input(state, segment.realign)
                    output = self.forward(inputs_embeds=step, hidden=True)
                    state = output.hidden_states[-1][:, -1:, :]
            if not segment.keep_prompt:
                self._drop(start, len(segment.prompt_ids))
        except BaseException:  # a segment goes in whole or not at all
            self.rewind(*saved)
            raise
        self.segments.append(segment)

    def _drop(self, start: int, count: int) -> None:
        """Remove ``count`` cache entries from ``start`` on, in every layer."""
        import torch

        for layer in self.cache.layers:
            keys, values = layer.keys, layer.values
            layer.keys = torch.cat([keys[:, :, :start], keys[:, :, start + count :]], dim=2)
            layer.values = torch.cat([values[:, :, :start], values[:, :, start + count :]], dim=2)

    def rewind(self, length: int, next_position: int, segments: int) -> None:
        """Cut the trace back to an earlier state (what :meth:`mark` returned).

        Example (with ``tmas[train]``)::

            saved = trace.mark(); trace.add(segment); trace.rewind(*saved)
        """
        extra = self.length() - length
        if extra > 0:
            self.cache.crop(-extra)
        self.next_position = next_position
        del self.segments[segments:]

    def mark(self) -> tuple[int, int, int]:
        """The trace's state now (cache length, next position, segments), for :meth:`rewind`.

        Example (with ``tmas[train]``)::

            LatentTrace(model).mark()  # (0, 0, 0)
        """
        return self.length(), self.next_position, len(self.segments)

    def next_logits(self, prompt_ids: list[int]) -> Any:
        """The next-token logits after ``prompt_ids`` read over the trace (the trace is left
        as it was).

        Example (with ``tmas[train]``)::

            best = int(trace.next_logits(judger_ids).argmax())
        """
        import torch

        saved = self.mark()
        try:
            with torch.no_grad():
                ids = torch.tensor([prompt_ids], device=self.device)
                return self.forward(input_ids=ids).logits[0, -1].float()
        finally:
            self.rewind(*saved)

    def decode(
        self,
        prompt_ids: list[int],
        *,
        max_tokens: int,
        eos_ids: set[int],
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> tuple[list[int], bool]:
        """Decode an answer to ``prompt_ids`` over the trace (greedy at temperature 0, else
        sampled from ``seed``): the generated ids and whether an end token came; the trace is
        left as it was, so several answers can be drawn from one trace.

        Example (with ``tmas[train]``)::

            ids, ended = trace.decode(judger_ids, max_tokens=64, eos_ids={2})
        """
        import torch

        saved = self.mark()
        generator = None
        if temperature > 0:
            generator = torch.Generator(device=self.device)
            generator.manual_seed(int(seed or 0))
        generated: list[int] = []
        try:
            with torch.no_grad():
                logits = self.forward(input_ids=torch.tensor([prompt_ids], device=self.device))
                logits = logits.logits[0, -1].float()
                for _ in range(max_tokens):
                    token = pick_token(logits, temperature, top_p, generator)
                    generated.append(token)
                    if token in eos_ids:
                        return generated, True
                    step = torch.tensor([[token]], device=self.device)
                    logits = self.forward(input_ids=step).logits[0, -1].float()
            return generated, False
        finally:
            self.rewind(*saved)


def pick_token(logits: Any, temperature: float, top_p: float, generator: Any) -> int:
    """The next token: the most likely at temperature 0, else a nucleus sample.

    Example (with ``tmas[train]``)::

        pick_token(torch.tensor([0.1, 2.0, 0.3]), 0.0, 1.0, None)  # 1
    """
    import torch

    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p < 1.0:
        ordered, order = torch.sort(probs, descending=True)
        outside = torch.cumsum(ordered, dim=-1) - ordered > top_p
        ordered[outside] = 0.0
        probs = torch.zeros_like(probs).scatter(0, order, ordered)
    return int(torch.multinomial(probs / probs.sum(), 1, generator=generator))
