"""Small helpers shared by the agent nodes."""

from __future__ import annotations

from tmas.parsing import Parsed
from tmas.state import ParseIssue


def issues_of(
    parsed: Parsed, *, iteration: int, role: str, index: int, text: str
) -> list[ParseIssue]:
    """A one-item ``parse_issues`` update when ``parsed`` records a problem, else ``[]``.

    Example:
        >>> issues_of(Parsed(None, "no answer found"), iteration=1, role="solver", index=0,
        ...           text="garbage")[0]["problem"]
        'no answer found'
    """
    if parsed.problem is None:
        return []
    return [
        {
            "iteration": iteration,
            "role": role,
            "index": index,
            "problem": parsed.problem,
            "excerpt": text[-160:],
        }
    ]
