"""Model calls that fail for good are recorded and left out; they never crash a run, unless
no call can succeed until a setting is fixed.

LLM nodes run under a LangGraph retry policy (``retry_policy``) and inside ``RecordFailures``,
which lets a transient ``ModelCallError`` propagate (so LangGraph retries it, after any wait the
server asked for) until the last attempt, and turns a call that failed for good (a
non-transient error, or a transient one on the last attempt) into a state update: the node's
own failure record (``on_failure(task, error)``: a failed candidate, a verification without a
verdict, ...), a ``failed_calls`` count in ``usage`` and a ``call_failures`` entry.

An iteration whose every solver call failed cannot go on: ``RequireCandidate`` stops the run
there with ``AllSolverCallsFailed``, its checkpoints intact, and
:func:`tmas.lifecycle.solver_replay.solver_replay` says where a resumed run picks up to make
those calls again.

A failure no retry and no other call can get past (a rejected API key, an unknown model, a
prompt that cannot fit the context: ``ModelCallError.fatal``) stops the run at once with that
error, naming the role, the model and the cause; the calls that finished are saved, so the run
resumes once the cause is fixed.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any

from langgraph.runtime import get_runtime
from langgraph.types import RetryPolicy

from tmas.config import TMASConfig
from tmas.llm.errors import ModelCallError, is_transient
from tmas.nodes.events import emit
from tmas.state import CallFailure, add_usage, failed


def retry_policy(
    config: TMASConfig, *, max_attempts: int | None = None, initial_interval: float | None = None
) -> RetryPolicy | None:
    """The retry policy of an LLM node: transient failures only, with exponential backoff
    (``None`` when ``config`` allows no retry and no attempts are given).

    Example:
        >>> policy = retry_policy(TMASConfig(max_retries=2, retry_initial_interval=0.01))
        >>> policy.max_attempts, policy.initial_interval, policy.backoff_factor
        (3, 0.01, 2.0)
        >>> retry_policy(TMASConfig(max_retries=0)) is None
        True
    """
    attempts = config.max_retries + 1 if max_attempts is None else max_attempts
    if attempts <= 1 and max_attempts is None:
        return None
    return RetryPolicy(
        initial_interval=config.retry_initial_interval
        if initial_interval is None
        else initial_interval,
        backoff_factor=config.retry_backoff_factor,
        max_interval=config.retry_max_interval,
        max_attempts=attempts,
        jitter=config.retry_jitter,
        retry_on=is_transient,
    )


def attempt_number() -> int | None:
    """Which attempt of the running task this is (1 first), from LangGraph's execution info;
    None outside a running graph.

    Example:
        >>> attempt_number() is None
        True
    """
    try:
        info = get_runtime().execution_info
    except RuntimeError:  # not inside a running graph
        return None
    return None if info is None else info.node_attempt


def task_location(task: Any) -> tuple[int | None, int | None]:
    """The iteration and candidate (or worker) index a node's input is about, where it says.

    Example:
        >>> task_location({"plan": {"iteration": 2, "index": 1}})
        (2, 1)
        >>> task_location({"iteration": 1, "candidate_index": 3, "check_index": 0})
        (1, 3)
    """
    if not isinstance(task, dict):
        return None, None
    plan = task.get("plan") if isinstance(task.get("plan"), dict) else {}
    iteration = task.get("iteration", plan.get("iteration"))
    index = task.get("candidate_index", plan.get("index", task.get("copy")))
    return iteration, index


class RecordFailures:
    """Node wrapper: a model call that failed for good becomes a recorded, left-out result.

    Args:
        node: the LLM node; its optional ``on_failure(task, error) -> update`` gives the
            state items that stand for the failed call.
        name: the node's name in the graph (kept with each failure).
        max_attempts: attempts of the node's retry policy (1 without one).
        max_wait_s: the longest wait a server's ``Retry-After`` may impose before a retry.

    Example:
        >>> def broken(task):
        ...     raise ModelCallError("guideline call failed: boom", role="guideline")
        >>> update = RecordFailures(broken, "guideline", 1)({"iteration": 1, "candidate_index": 0})
        >>> update["usage"]["guideline"]["failed_calls"], update["call_failures"][0]["error"]
        (1, 'guideline call failed: boom')
    """

    def __init__(self, node: Any, name: str, max_attempts: int, max_wait_s: float = 30.0) -> None:
        self.node = node
        self.name = name
        self.max_attempts = max_attempts
        self.max_wait_s = max_wait_s
        self.node_is_async = is_async_node(node)

    def __call__(self, task: Any) -> dict[str, Any]:
        if self.node_is_async:
            raise TypeError(
                f"node {self.name!r} is async: run the graph with ainvoke or astream "
                "(as the command line does)"
            )
        try:
            return self.node(task)
        except ModelCallError as exc:
            wait = self._retry_wait(task, exc)
            if wait is None:
                return self.failure_update(task, exc)
            time.sleep(wait)
            raise

    async def acall(self, task: Any) -> dict[str, Any]:
        """The same on the running event loop (the node's own ``acall`` where it has one)."""
        try:
            return await call_async(self.node, task)
        except ModelCallError as exc:
            wait = self._retry_wait(task, exc)
            if wait is None:
                return self.failure_update(task, exc)
            await asyncio.sleep(wait)
            raise

    def _retry_wait(self, task: Any, exc: ModelCallError) -> float | None:
        """Seconds to wait before LangGraph retries ``exc`` (the caller re-raises it), or None
        when the call failed for good; a fatal error is raised at once, its failure announced."""
        if exc.fatal:
            emit("call_failed", **self.failure_record(task, exc))
            raise exc  # a setting to fix: the run stops here, its checkpoints intact
        attempt = attempt_number()
        if exc.transient and attempt is not None and attempt < self.max_attempts:
            return min(exc.retry_after_s or 0.0, self.max_wait_s)
        return None

    def failure_record(self, task: Any, exc: ModelCallError) -> CallFailure:
        """The ``call_failures`` entry of a call that failed for good."""
        iteration, index = task_location(task)
        return {
            "iteration": iteration,
            "role": exc.role or "unknown",
            "node": self.name,
            "index": index,
            "error": str(exc)[:500],
        }

    def failure_update(self, task: Any, exc: ModelCallError) -> dict[str, Any]:
        """The node's failure items plus the failed call in ``usage`` and ``call_failures``."""
        record = self.failure_record(task, exc)
        role = record["role"]
        on_failure = getattr(self.node, "on_failure", None)
        update = dict(on_failure(task, str(exc)) if on_failure is not None else {})
        update["usage"] = add_usage(update.get("usage"), {role: {"failed_calls": 1}})
        update["call_failures"] = [*update.get("call_failures", []), record]
        emit("call_failed", **record)
        return update


def record_failures(
    node: Any, name: str, policy: RetryPolicy | None, config: TMASConfig
) -> RecordFailures:
    """``node`` wrapped in ``RecordFailures`` for the attempts of its retry ``policy``.

    Example:
        >>> record_failures(print, "solve", retry_policy(TMASConfig(max_retries=2)),
        ...                 TMASConfig()).max_attempts
        3
    """
    attempts = policy.max_attempts if policy is not None else 1
    return RecordFailures(node, name, attempts, config.retry_max_interval)


class AllSolverCallsFailed(RuntimeError):
    """Every solver call of an iteration failed: the run stops (resume makes them again)."""


def all_failed(candidates: list[dict[str, Any]] | None) -> bool:
    """Whether there are candidates and every one of them records a failed solver call.

    Example:
        >>> all_failed([{"error": "HTTP 500"}]), all_failed([]), all_failed([{"answer": "3"}])
        (True, False, False)
    """
    return bool(candidates) and all(failed(c) for c in candidates or [])


def check_candidates(state: dict[str, Any]) -> None:
    """Raise ``AllSolverCallsFailed`` when the iteration has candidates and all of them failed.

    Example:
        >>> check_candidates({"iteration": 1, "candidates": [{"index": 0, "answer": "3"}]})
        >>> check_candidates({"iteration": 2, "candidates": [{"index": 0, "error": "timeout"}]})
        Traceback (most recent call last):
        ...
        tmas.graphs.call_failures.AllSolverCallsFailed: every solver call of iteration 2 failed ...
    """
    candidates = sorted(state.get("candidates") or [], key=lambda c: c.get("index", 0))
    if all_failed(candidates):
        raise AllSolverCallsFailed(
            f"every solver call of iteration {state.get('iteration')} failed "
            f"({len(candidates)} calls); last error: {candidates[-1]['error']}"
        )


class RequireCandidate:
    """Node wrapper for the node after the solvers: stops the run when no candidate survived.

    Example:
        >>> guarded = RequireCandidate(lambda state: {"seen": True})
        >>> guarded({"candidates": [{"index": 0, "answer": "3"}]})
        {'seen': True}
    """

    def __init__(self, node: Any) -> None:
        self.node = node

    def __call__(self, state: dict[str, Any]) -> Any:
        check_candidates(state)
        return self.node(state)

    async def acall(self, state: dict[str, Any]) -> Any:
        """The same on the running event loop."""
        check_candidates(state)
        return await call_async(self.node, state)


def is_async_node(node: Any) -> bool:
    """Whether calling ``node`` gives a coroutine (an ``async def`` function or ``__call__``).

    Example:
        >>> async def node(task): ...
        >>> is_async_node(node), is_async_node(print)
        (True, False)
    """
    call = type(node).__call__ if not inspect.isfunction(node) else node
    return inspect.iscoroutinefunction(node) or inspect.iscoroutinefunction(call)


async def call_async(node: Any, task: Any) -> Any:
    """Await ``node``'s ``acall`` when it has one, or ``node`` itself when it is a coroutine
    function; else run it in a thread (context kept).

    Example:
        >>> asyncio.run(call_async(lambda task: task + 1, 1))
        2
        >>> async def plus_two(task):
        ...     return task + 2
        >>> asyncio.run(call_async(plus_two, 1))
        3
    """
    acall = getattr(node, "acall", None)
    if acall is not None:
        return await acall(task)
    if is_async_node(node):
        return await node(task)
    return await asyncio.to_thread(node, task)
