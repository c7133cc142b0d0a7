"""Deterministic per-call seeds, so a resumed or repeated run makes the same choices."""

from __future__ import annotations

import hashlib


def derive_seed(base: int, *parts: object) -> int:
    """A 31-bit seed that depends only on ``base`` and ``parts``.

    Example:
        >>> derive_seed(0, "solve", 1, 2) == derive_seed(0, "solve", 1, 2)
        True
    """
    key = "/".join(str(p) for p in (base, *parts)).encode("utf-8")
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") & 0x7FFFFFFF


def draw_uniform(base: int, *parts: object) -> float:
    """A number in [0, 1) that depends only on ``base`` and ``parts``.

    Example:
        >>> 0.0 <= draw_uniform(7, "mode", 2, 0) < 1.0
        True
    """
    return derive_seed(base, *parts) / 0x80000000
