"""Model text made safe for a terminal: no escape sequences or control characters get through."""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: object, limit: int | None = None, *, collapse: bool = True) -> str:
    """``text`` without terminal escape sequences or control characters, whitespace collapsed
    to single spaces (unless ``collapse`` is off: line breaks, tabs and runs of spaces kept),
    clipped to ``limit`` characters (with an ellipsis).

    Example:
        >>> plain("ok\\x1b[2J\\x1b]0;title\\x07 done\\n\\tnext", limit=12)
        'ok done next'
        >>> plain("a" * 10, limit=4)
        'aaa…'
        >>> plain("two\\nlines  kept\\x1b[2J", collapse=False)
        'two\\nlines  kept'
    """
    cleaned = _CONTROL.sub(" ", _ANSI.sub("", str(text)))
    if collapse:
        cleaned = " ".join(cleaned.split())
    if limit is not None and len(cleaned) > limit:
        return cleaned[: max(limit - 1, 0)] + "…"
    return cleaned
