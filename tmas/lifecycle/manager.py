"""Starting and resuming saved runs: the glue between registry, checkpointer, graph and display."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.catalog import run_plugins
from tmas.graphs.compiler import compile_spec, nodes_where, solver_nodes, spec_uses_store
from tmas.graphs.estimate import estimate_run_calls
from tmas.graphs.pipeline import pipeline_nodes, with_inline_bodies
from tmas.graphs.plugin_files import load_plugin
from tmas.graphs.settings import topology_config
from tmas.graphs.spec import GraphSpec, parse_spec
from tmas.lifecycle.event_loop import run_to_end
from tmas.lifecycle.history import saved_state
from tmas.lifecycle.memory_runs import seeded_banks
from tmas.lifecycle.progress import ProgressDisplay, ProgressTracker
from tmas.lifecycle.run_end import after_finish, needs_after_finish
from tmas.lifecycle.solver_replay import solver_replay
from tmas.llm.backend import BackendSpec, make_router
from tmas.llm.router import ModelRouter
from tmas.nodes.prompts import PromptSet
from tmas.state import lost_roles
from tmas.storage import Storage, as_storage
from tmas.storage.run_registry import RunRecord

EventSink = Callable[[dict[str, Any]], None]
# Called with the state after each iteration of a reviewed run; returns channel updates to
# apply before the next iteration ({} for none), or None to stop there (resume later).
Reviewer = Callable[[dict[str, Any]], dict[str, Any] | None]


STOP_POLL_S = 0.1  # how often a run driven with a stop event looks at it


class RunBusyError(RuntimeError):
    """The run is being driven by another live process."""


class RunCancelled(RuntimeError):
    """The run's stop event was set: it stopped where it was, saved up to its last step."""


@dataclass
class RunOutcome:
    """The state a run ended in and whether it finished."""

    run_id: str
    state: dict[str, Any]
    paused: bool = False  # stopped by a reviewer after an iteration; resume to go on

    @property
    def final_answer(self) -> str | None:
        """The run's answer (by its selection rule), or None."""
        return self.state.get("final_answer")

    @property
    def history(self) -> list[dict[str, Any]]:
        """Every iteration's record: answers, vote, scores, Pass@1."""
        return list(self.state.get("history") or [])

    @property
    def finished(self) -> bool:
        """True once the loop stopped (max iterations or the early-stop rule)."""
        return bool(self.state.get("stop_reason"))

    @property
    def lost_roles(self) -> list[str]:
        """Roles that lost every call of the run: a finished run with any is degraded."""
        return lost_roles(self.state.get("usage"))


def thread_config(run_id: str, config: TMASConfig) -> dict[str, Any]:
    """The LangGraph config of a run.

    LangGraph's ``max_concurrency`` (a top-level key: inside ``configurable`` it is ignored)
    sizes the worker pool that also saves each finished task's result. It is set above the
    widest fan-out so results are saved at once; LLM calls are bounded by the router instead.

    Example:
        >>> thread_config("abc", TMASConfig(n_candidates=4, n_verifications=2))["max_concurrency"]
        24
    """
    widest = config.widest() * max(config.n_verifications, 2)
    return {
        "configurable": {"thread_id": run_id},
        "max_concurrency": widest + 16,
        "recursion_limit": 50 * config.max_iterations + 100,
    }


class RunManager:
    """Creates, continues and inspects runs stored in one run database (a Storage, or a SQLite
    connection).

    ``router_factory`` turns a saved backend into models; tests pass one that returns fakes.
    """

    def __init__(self, storage: Storage | Any, router_factory: Any = None) -> None:
        self.storage = as_storage(storage)
        self.registry = self.storage.registry
        self.router_factory = router_factory or (
            lambda backend, config: make_router(BackendSpec(**backend), config)
        )

    def graph_for(
        self,
        run_config: dict[str, Any],
        backend: dict[str, Any],
        topology: dict[str, Any] | None,
        max_concurrency: int | None = None,
    ) -> tuple[CompiledStateGraph, TMASConfig, GraphSpec]:
        """Build the compiled graph of a run, with at most ``max_concurrency`` LLM calls in
        flight (None: the backend's own default, :meth:`BackendSpec.default_concurrency`).
        Fails (before anything is saved) when the backend settings cannot work.

        ``topology`` is ``{"spec": ..., "plugins": [...]}`` (None: the bundled TMAS spec)."""
        topology = topology or {"spec": load_bundled("tmas").model_dump(by_alias=True)}
        for module in topology.get("plugins", []):
            load_plugin(module)
        spec = parse_spec(topology["spec"])
        config = TMASConfig(**run_config)
        router: ModelRouter = self.router_factory(backend, config)
        if max_concurrency is None:
            max_concurrency = BackendSpec(**backend).default_concurrency()
        router = router.limited_to(max_concurrency)
        store = self.storage.store() if spec_uses_store(spec) else None
        graph = compile_spec(
            spec, config, router, checkpointer=self.storage.checkpointer, store=store
        )
        return graph, config, spec

    def start(
        self,
        run_id: str,
        *,
        problem: str,
        gold_answer: str | None,
        config: TMASConfig,
        backend: BackendSpec,
        spec: GraphSpec | None = None,
        plugins: list[str] | None = None,
        documents: list[str] | None = None,
        show_progress: bool = True,
        max_concurrency: int | None = None,
        on_event: EventSink | None = None,
        review: Reviewer | None = None,
        plan_choice: dict[str, Any] | None = None,
        origin: str | None = None,
        stop: threading.Event | None = None,
    ) -> RunOutcome:
        """Register a new run and run it to the end (nothing is saved if the backend is bad).
        Its config is the topology's ``config:`` block under the fields ``config`` sets
        (:func:`tmas.graphs.settings.topology_config`).

        ``on_event`` receives the agents' live events (:mod:`tmas.nodes.events`);
        ``review`` pauses the run after each iteration (see ``Reviewer``); ``plan_choice``
        (:mod:`tmas.orchrm.choice`) is saved with the topology: the candidate plans and scores
        that chose it; ``origin`` names what started the run (``serve``), saved with it too.
        Setting ``stop`` ends the run at once with :class:`RunCancelled` (it stays resumable).
        """
        spec = with_inline_bodies(spec or load_bundled("tmas"))  # saved whole: no file needed
        config = topology_config(spec, config)
        run_config = config.model_dump(mode="json")
        backend_values = backend.model_dump(mode="json")
        saved_plugins = run_plugins(spec, plugins or [])  # files by absolute path
        topology = {"spec": spec.model_dump(by_alias=True), "plugins": saved_plugins}
        if plan_choice is not None:
            topology["plan_choice"] = plan_choice
        if origin is not None:
            topology["origin"] = origin
        graph, _, _ = self.graph_for(run_config, backend_values, topology, max_concurrency)
        self.registry.create(
            run_id,
            problem=problem,
            gold_answer=gold_answer,
            graph=spec.name,
            config=run_config,
            backend=backend_values,
            topology=topology,
            documents=documents,
        )
        return self._drive(
            self.registry.get(run_id), graph, config, spec, show_progress, on_event, review, stop
        )

    def resume(
        self,
        run_id: str,
        *,
        show_progress: bool = True,
        max_concurrency: int | None = None,
        on_event: EventSink | None = None,
        review: Reviewer | None = None,
        settings: tuple[dict[str, Any], dict[str, Any]] | None = None,
        stop: threading.Event | None = None,
    ) -> RunOutcome:
        """Continue a saved run from its last checkpoint (a finished run is returned as is, its
        memory items and proof grade saved if a stop came between its end and theirs);
        a run stopped because every solver call of an iteration failed makes those calls again.

        ``settings`` (config, backend) replace the saved ones first: corrected model settings
        after a run stopped on an unknown model, a moved server or a context too small."""
        record = self.registry.get(run_id)
        state = saved_state(self.storage, run_id)
        if state.get("stop_reason"):  # finished; what follows a finish is done (once) now
            if needs_after_finish(TMASConfig(**record.config), state, record.gold_answer):
                graph, config, spec = self.graph_for(
                    record.config, record.backend, record.topology, max_concurrency
                )
                cfg, prompts = thread_config(run_id, config), PromptSet(spec.prompts)
                state = after_finish(self, record, graph, cfg, config, state, prompts)
            return RunOutcome(run_id, state)
        if record.status == "running" and record.process_alive():
            raise RunBusyError(
                f"run {run_id} is still running in process {record.pid}; "
                "stop that process first (or wait for it)"
            )
        if settings is not None:
            self.registry.set_settings(run_id, *settings)
            record = self.registry.get(run_id)
        graph, config, spec = self.graph_for(
            record.config, record.backend, record.topology, max_concurrency
        )
        self.registry.set_status(run_id, "running")
        return self._drive(record, graph, config, spec, show_progress, on_event, review, stop)

    def _drive(
        self,
        record: RunRecord,
        graph: CompiledStateGraph,
        config: TMASConfig,
        spec: GraphSpec,
        show_progress: bool,
        on_event: EventSink | None = None,
        review: Reviewer | None = None,
        stop: threading.Event | None = None,
    ) -> RunOutcome:
        cfg = thread_config(record.run_id, config)
        state = saved_state(self.storage, record.run_id, full_history=False)
        next_input: Any = None
        start_cfg = cfg
        if not state:
            next_input = {
                "problem": record.problem,
                "gold_answer": record.gold_answer,
                "config": record.config,
                "documents": record.documents or [],
                **seeded_banks(self.storage, config, record.problem),
            }
        elif (replay := solver_replay(graph, cfg, solver_nodes(spec))) is not None:
            start_cfg, next_input = replay  # every solver call of the iteration failed: again
        pause_after = [iteration_end_node(spec)] if review is not None else None
        modes = ["tasks", "updates", *(["custom"] if on_event else [])]
        estimate = estimate_run_calls(spec, config)
        tracker = ProgressTracker(estimate, config.max_iterations, state, pipeline_nodes(spec))
        paused = False
        try:
            while True:
                with ProgressDisplay(tracker, enabled=show_progress) as display:
                    options = {
                        "stream_mode": modes,
                        "durability": config.durability,
                        "interrupt_after": pause_after,
                        "subgraphs": True,  # the events and calls of pipeline bodies
                    }
                    stream_pass(graph, next_input, start_cfg, options, display, on_event, stop)
                snapshot = graph.get_state(cfg)
                if review is None or not snapshot.next:
                    break
                edits = review(dict(snapshot.values))
                if edits is None:
                    paused = True
                    break
                if edits:
                    graph.update_state(cfg, edits)
                next_input, start_cfg = None, cfg
        except BaseException as exc:
            status = "failed"
            if isinstance(exc, KeyboardInterrupt):
                status = "interrupted"
            elif isinstance(exc, RunCancelled):
                status = "cancelled"
            self.registry.set_status(record.run_id, status, f"{type(exc).__name__}: {exc}")
            raise
        final = saved_state(self.storage, record.run_id)
        status = finished_status(final) or ("paused" if paused else "stopped")
        if status in ("finished", "degraded"):
            final = after_finish(self, record, graph, cfg, config, final, PromptSet(spec.prompts))
        self.registry.set_status(record.run_id, status)
        return RunOutcome(record.run_id, final, paused)

    def status_of(self, record: RunRecord, state: dict[str, Any]) -> str:
        """finished / degraded / running / paused / cancelled / interrupted / failed, from the
        registry and the checkpoint."""
        if done := finished_status(state):
            return done
        if record.status == "running" and record.process_alive():
            return "running"
        if record.status in ("failed", "paused", "cancelled"):
            return record.status
        return "interrupted"


def stream_pass(
    graph: CompiledStateGraph,
    payload: Any,
    start: dict[str, Any],
    options: dict[str, Any],
    display: ProgressDisplay,
    on_event: EventSink | None,
    stop: threading.Event | None = None,
) -> None:
    """One pass of a run's graph, to its end or its next pause, driven with ``astream`` on
    one event loop (the agents' model calls are async ones); live events go to ``on_event``
    and everything else to the progress display. Once ``stop`` is set the pass is cancelled
    (its calls in flight too) and :class:`RunCancelled` raised."""

    async def one_pass() -> None:
        async for namespace, mode, chunk in graph.astream(payload, start, **options):
            if mode == "custom":
                on_event(chunk)  # type: ignore[misc]
            else:
                display.observe(mode, chunk, namespace)

    async def until_stopped() -> None:
        task = asyncio.ensure_future(one_pass())
        while not task.done():
            await asyncio.wait({task}, timeout=STOP_POLL_S)
            if stop is not None and stop.is_set() and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                raise RunCancelled("the run was cancelled")
        task.result()

    run_to_end(one_pass if stop is None else until_stopped)


def finished_status(state: dict[str, Any]) -> str | None:
    """``finished``, ``degraded`` (finished, but some role lost every call), or None for a run
    that has not finished.

    Example:
        >>> finished_status({"stop_reason": "max_iterations"}), finished_status({})
        ('finished', None)
        >>> finished_status({"stop_reason": "max_iterations",
        ...                  "usage": {"verifier": {"calls": 0, "failed_calls": 4}}})
        'degraded'
    """
    if not state.get("stop_reason"):
        return None
    return "degraded" if lost_roles(state.get("usage")) else "finished"


def iteration_end_node(spec: GraphSpec) -> str:
    """The node after which an iteration is over (where a reviewed run pauses, and from whose
    checkpoint a run is forked: a node type registered ``ends_iteration``); ValueError for
    topologies without iterations.

    Example:
        >>> iteration_end_node(load_bundled("tmas"))
        'record_iteration'
    """
    found = nodes_where(spec, "ends_iteration")
    if not found:
        raise ValueError(f"topology {spec.name!r} has no node that ends an iteration")
    return found[0]
