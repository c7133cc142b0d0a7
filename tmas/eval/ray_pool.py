"""Running an evaluation's problems as Ray tasks on a Ray cluster.

Each task solves one problem as its own saved run (:func:`tmas.eval.job.solve_problem`) in the
shared run database, calling the models the backend settings name (on a cluster: one
OpenAI-compatible endpoint, e.g. vLLM, that every node can reach). The driver keeps at most
``concurrency`` tasks in flight and yields each results row as its task ends.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tmas.eval.job import ProblemJob, solve_problem
from tmas.eval.results import result_row
from tmas.llm.backend import require_module

LOCAL = "local"
REACH_TIMEOUT_S = 5.0


def check_reachable(address: str) -> None:
    """Fail at once (Ray itself retries for minutes) when a ``host:port`` cluster address
    accepts no connection; ``auto``, ``local`` and ``ray://`` addresses are left to Ray.

    Example:
        >>> check_reachable("auto")
    """
    if address in (LOCAL, "auto") or "://" in address or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT_S):
            return
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot reach the Ray cluster at {address}: {exc}") from None


def _connect(address: str, env_vars: dict[str, str]) -> bool:
    """Join the cluster at ``address`` ("local": start a private one). True when this call
    started Ray (and so should shut it down)."""
    import ray

    if ray.is_initialized():
        return False
    check_reachable(address)
    runtime_env = {"env_vars": env_vars} if env_vars else None
    try:
        ray.init(
            address=None if address == LOCAL else address,
            runtime_env=runtime_env,
            log_to_driver=False,
            include_dashboard=False,
            configure_logging=False,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ValueError(f"cannot reach the Ray cluster at {address}: {exc}") from None
    return True


def _forwarded_env(jobs: Sequence[ProblemJob]) -> dict[str, str]:
    """API key variables the workers need, taken from this process's environment."""
    names = {job.plan.backend.api_key_env for job in jobs if job.plan.backend.api_key_env}
    return {name: os.environ[name] for name in names if name in os.environ}


def run_on_ray(
    jobs: Sequence[ProblemJob],
    address: str,
    concurrency: int,
    stopped: Callable[[], bool] = lambda: False,
) -> Iterator[dict[str, Any]]:
    """Yield one results row per job, solved as Ray tasks on the cluster at ``address``; once
    ``stopped()`` is true no further job is submitted (those in flight finish).

    A task whose worker dies yields a row with the error; its run stays saved, so running the
    evaluation again resumes it.
    """
    require_module("ray", "pip install 'tmas[ray]'")
    import ray

    started = _connect(address, _forwarded_env(jobs))
    remote = ray.remote(num_cpus=1, max_retries=0)(solve_problem)
    waiting = list(jobs)
    in_flight: dict[Any, ProblemJob] = {}
    try:
        while waiting or in_flight:
            while waiting and len(in_flight) < concurrency and not stopped():
                job = waiting.pop(0)
                in_flight[remote.remote(job)] = job
            if not in_flight:  # stopped with nothing left in flight
                break
            done, _ = ray.wait(list(in_flight), num_returns=1)
            job = in_flight.pop(done[0])
            try:
                yield ray.get(done[0])
            except ray.exceptions.RayError as exc:
                reason = f"Ray task failed: {type(exc).__name__}: {str(exc)[:500]}"
                yield result_row(job.problem, job.run_id, job.plan.name, {}, None, reason)
    finally:
        for ref in in_flight:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()
