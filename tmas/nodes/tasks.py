"""Fan-out tasks: what a task builder is asked (:class:`TaskRequest`), and builders written
before requests, adapted."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tmas.config import TMASConfig
from tmas.roles import RoleBook


@dataclass(frozen=True)
class TaskRequest:
    """What a task builder is asked: ``state``, the run's state (or a chain's input) when the
    fan-out fires, ``config``, the run's settings, and ``budgets``, each role's answer budget
    in the run (its binding's).

    Example:
        >>> TaskRequest({"problem": "1+1?"}, TMASConfig(), {"solver": 64}).budget("solver")
        64
    """

    state: Mapping[str, Any]
    config: TMASConfig = field(default_factory=TMASConfig)
    budgets: Mapping[str, int] = field(default_factory=dict)

    def budget(self, role: str) -> int:
        """The answer budget of ``role`` in this run (a request made without the run's
        bindings: the package's default for the role).

        Example:
            >>> TaskRequest({}, TMASConfig()).budget("verifier")
            256
        """
        if role in self.budgets:
            return self.budgets[role]
        return RoleBook.builtin()[role].max_tokens


TaskBuilder = Callable[[TaskRequest], list[dict[str, Any]]]


def as_request_builder(builder: Callable[..., list[dict[str, Any]]]) -> TaskBuilder:
    """``builder`` as a builder of one :class:`TaskRequest`: as it is when it takes one
    argument; a builder of ``(state, config)`` (written before requests) adapted, once, when it
    is registered.

    Example:
        >>> older = lambda state, config: [{"n": config.n_candidates}]
        >>> as_request_builder(older)(TaskRequest({}, TMASConfig(n_candidates=3)))
        [{'n': 3}]
    """
    if len(inspect.signature(builder).parameters) <= 1:
        return builder

    def adapted(request: TaskRequest) -> list[dict[str, Any]]:
        return builder(dict(request.state), request.config)

    for attribute in ("__doc__", "__name__", "__qualname__", "__module__"):
        if hasattr(builder, attribute):
            setattr(adapted, attribute, getattr(builder, attribute))
    return adapted
