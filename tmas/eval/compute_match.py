"""Matching compute: the width at which a condition spends the reference's tokens, from pilot
runs. Tokens per problem are modelled as ``a*w + b*w^2`` in the width ``w`` (independent
samples grow linearly; answers that every member of the next round reads grow with the
square), fitted exactly through one or two measured widths."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TokenModel:
    """Mean tokens per problem as ``linear*w + square*w^2``."""

    linear: float
    square: float = 0.0

    def tokens(self, width: int) -> float:
        """The modelled tokens at ``width``.

        Example:
            >>> TokenModel(100.0, 10.0).tokens(3)
            390.0
        """
        return self.linear * width + self.square * width * width


def fit_tokens(points: Sequence[tuple[int, float]]) -> TokenModel:
    """The token model through one ``(width, mean tokens)`` point (linear) or two (with a
    square term; a negative one, which noise can give, is dropped for the linear fit through
    both). ValueError for no points or a width below 1.

    Example:
        >>> fit_tokens([(4, 2000.0)])
        TokenModel(linear=500.0, square=0.0)
        >>> fit_tokens([(1, 110.0), (2, 240.0)])
        TokenModel(linear=100.0, square=10.0)
    """
    if not points or not 1 <= len(points) <= 2 or min(w for w, _ in points) < 1:
        raise ValueError(f"need one or two pilot widths of at least 1, got {list(points)}")
    if len(points) == 1:
        width, tokens = points[0]
        return TokenModel(tokens / width)
    (w1, t1), (w2, t2) = sorted(points)
    square = (t2 / w2 - t1 / w1) / (w2 - w1)
    if square >= 0:
        return TokenModel(t1 / w1 - square * w1, square)
    return TokenModel((t1 * w1 + t2 * w2) / (w1 * w1 + w2 * w2))


@dataclass(frozen=True)
class WidthChoice:
    """The chosen width, its modelled tokens and how far they are from the target."""

    width: int
    tokens: float
    target: float

    @property
    def mismatch(self) -> float:
        """Modelled tokens over the target, minus one (``+0.05``: 5% more).

        Example:
            >>> round(WidthChoice(4, 1050.0, 1000.0).mismatch, 3)
            0.05
        """
        return self.tokens / self.target - 1.0

    def record(self) -> dict[str, float | int]:
        """For the study's design file.

        Example:
            >>> WidthChoice(4, 1050.0, 1000.0).record()["mismatch"]
            0.05
        """
        return {
            "width": self.width,
            "modelled_tokens": round(self.tokens, 1),
            "target_tokens": round(self.target, 1),
            "mismatch": round(self.mismatch, 4),
        }


def matching_width(model: TokenModel, target: float, max_width: int = 64) -> WidthChoice:
    """The width in ``1..max_width`` whose modelled tokens are nearest ``target``.

    Example:
        >>> matching_width(TokenModel(500.0), 5100.0)
        WidthChoice(width=10, tokens=5000.0, target=5100.0)
        >>> matching_width(TokenModel(100.0, 10.0), 1000.0).width
        6
    """
    if target <= 0:
        raise ValueError(f"the reference spent {target} tokens per problem: nothing to match")
    best = min(range(1, max_width + 1), key=lambda w: abs(model.tokens(w) - target))
    return WidthChoice(best, model.tokens(best), target)
