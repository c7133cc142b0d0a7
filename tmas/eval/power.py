"""How wide a paired comparison's interval will be before it runs: the expected half-width of
the 95% interval of a paired accuracy difference over ``n`` problems, from the share of
problems on which the two conditions disagree (one right, one wrong), and the smallest
difference such a study detects with 80% power."""

from __future__ import annotations

import math
from collections.abc import Sequence

Z_95 = 1.959964
Z_80 = 0.841621


def discordant_share(pairs: Sequence[tuple[bool, bool]]) -> float:
    """The share of problems on which exactly one of the two was right, smoothed as
    ``(discordant + 1) / (n + 2)`` so a small pilot that happened to agree everywhere does not
    promise a zero-width interval.

    Example:
        >>> discordant_share([(True, True), (True, False), (False, False)])
        0.4
        >>> discordant_share([])
        0.5
    """
    discordant = sum(1 for a, b in pairs if a != b)
    return (discordant + 1) / (len(pairs) + 2)


def half_width(discordant: float, problems: int) -> float:
    """The expected half-width of the 95% interval of the paired difference: the variance of
    a per-problem difference in {-1, 0, 1} is at most the discordant share.

    Example:
        >>> round(half_width(0.25, 100), 3)
        0.098
    """
    return Z_95 * math.sqrt(discordant / max(problems, 1))


def detectable_effect(discordant: float, problems: int) -> float:
    """The smallest true difference found (interval excluding zero) with 80% power.

    Example:
        >>> round(detectable_effect(0.25, 100), 3)
        0.14
    """
    return (Z_95 + Z_80) * math.sqrt(discordant / max(problems, 1))


def problems_needed(discordant: float, effect: float) -> int:
    """Problems needed to detect ``effect`` with 80% power at this discordant share.

    Example:
        >>> problems_needed(0.25, 0.10)
        197
    """
    return math.ceil(discordant * ((Z_95 + Z_80) / effect) ** 2)
