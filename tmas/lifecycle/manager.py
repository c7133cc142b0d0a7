"""Starting and resuming saved runs: the glue between registry, checkpointer, graph and display."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from tmas.config import TMASConfig
from tmas.graphs.compiler import compile_plan
from tmas.graphs.estimate import estimate_run_calls
from tmas.graphs.pipeline import pipeline_nodes
from tmas.graphs.plugin_files import load_plugin
from tmas.graphs.run_plan import (
    RunPlan,
    Settings,
    plan_router,
    saved_plan,
    with_current_plugins,
)
from tmas.graphs.spec import GraphSpec
from tmas.graphs.traits import nodes_where, solver_nodes, spec_uses_store
from tmas.lifecycle.history import saved_state
from tmas.lifecycle.memory_runs import seeded_banks
from tmas.lifecycle.progress import ProgressDisplay, ProgressTracker
from tmas.lifecycle.run_end import after_finish, needs_after_finish
from tmas.lifecycle.run_status import RunBusyError, RunOutcome, finished_status, run_status
from tmas.lifecycle.run_stream import EventSink, RunCancelled, stream_pass
from tmas.lifecycle.solver_replay import solver_replay
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.storage import Storage, as_storage
from tmas.storage.run_registry import RunRecord

# Called with the state after each iteration of a reviewed run; returns channel updates to
# apply before the next iteration ({} for none), or None to stop there (resume later).
Reviewer = Callable[[dict[str, Any]], dict[str, Any] | None]


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

    ``router_factory`` turns a run's plan into its models (default:
    :func:`tmas.graphs.run_plan.plan_router`, from the plan's role bindings); tests pass one
    that returns fakes. ``on_notice`` hears what a user should know before a run goes on (a
    plugin whose source changed since the run was saved); default: the ``tmas`` logger.
    """

    def __init__(
        self,
        storage: Storage | Any,
        router_factory: Callable[[RunPlan], ModelRouter] | None = None,
        on_notice: Callable[[str], None] | None = None,
    ) -> None:
        self.storage = as_storage(storage)
        self.registry = self.storage.registry
        self.router_factory = router_factory or plan_router
        self.on_notice = on_notice or logging.getLogger("tmas").warning

    def plan_of(self, record: RunRecord) -> RunPlan:
        """The plan a saved run runs by (:func:`tmas.graphs.run_plan.saved_plan`)."""
        return saved_plan(record)

    def graph_for(self, plan: RunPlan, max_concurrency: int | None = None) -> CompiledStateGraph:
        """The compiled graph of a run's plan, with at most ``max_concurrency`` LLM calls in
        flight (None: the backend's own default, :meth:`BackendSpec.default_concurrency`).
        Fails (before anything is saved) when the backend settings cannot work. The plan's
        plugins are imported first."""
        for ref in plan.plugin_refs():
            load_plugin(ref)
        router: ModelRouter = self.router_factory(plan)
        if max_concurrency is None:
            max_concurrency = plan.backend.default_concurrency()
        router = router.limited_to(max_concurrency)
        store = self.storage.store() if spec_uses_store(plan.topology) else None
        return compile_plan(plan, router, checkpointer=self.storage.checkpointer, store=store)

    def start(
        self,
        run_id: str,
        *,
        problem: str,
        gold_answer: str | None,
        plan: RunPlan,
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

        The run follows ``plan`` (:func:`tmas.graphs.run_plan.plan_run`), saved with it.

        ``on_event`` receives the agents' live events (:mod:`tmas.nodes.events`);
        ``review`` pauses the run after each iteration (see ``Reviewer``); ``plan_choice``
        (:mod:`tmas.orchrm.choice`) is saved as the run's provenance: the candidate plans and
        scores that chose it; ``origin`` names what started the run (``serve``), saved too.
        Setting ``stop`` ends the run at once with :class:`RunCancelled` (it stays resumable).
        """
        graph = self.graph_for(plan, max_concurrency)
        self.registry.create(
            run_id,
            problem=problem,
            gold_answer=gold_answer,
            plan=plan.record(),
            provenance={"plan_choice": plan_choice, "origin": origin},
            documents=documents,
        )
        return self._drive(self.registry.get(run_id), graph, plan, show_progress, on_event,
                           review, stop)  # fmt: skip

    def resume(
        self,
        run_id: str,
        *,
        show_progress: bool = True,
        max_concurrency: int | None = None,
        on_event: EventSink | None = None,
        review: Reviewer | None = None,
        settings: Settings | None = None,
        backend: BackendSpec | dict[str, Any] | None = None,
        stop: threading.Event | None = None,
    ) -> RunOutcome:
        """Continue a saved run from its last checkpoint (a finished run is returned as is, its
        memory items and proof grade saved if a stop came between its end and theirs);
        a run stopped because every solver call of an iteration failed makes those calls again.

        ``settings`` and ``backend`` revise the saved plan first (:meth:`RunPlan.revised`):
        corrected model settings after a run stopped on an unknown model, a moved server or a
        context too small."""
        record = self.registry.get(run_id)
        state = saved_state(self.storage, run_id)
        if state.get("stop_reason"):  # finished; what follows a finish is done (once) now
            plan = self.plan_of(record)
            if needs_after_finish(plan.config, state, record.gold_answer):
                graph = self.graph_for(plan, max_concurrency)
                cfg = thread_config(run_id, plan.config)
                state = after_finish(self, record, graph, cfg, plan, state)
            return RunOutcome(run_id, state)
        if record.status == "running" and record.process_alive():
            raise RunBusyError(
                f"run {run_id} is still running in process {record.pid}; "
                "stop that process first (or wait for it)"
            )
        plan = self.plan_of(record)
        revised = plan.revised(settings, backend=backend) if settings or backend else plan
        revised, changes = with_current_plugins(revised)
        for change in changes:
            self.on_notice(f"run {run_id}: {change}; the new digest is saved with it")
        if revised != plan:
            plan = revised
            self.registry.set_plan(run_id, plan.record())
            record = self.registry.get(run_id)
        graph = self.graph_for(plan, max_concurrency)
        self.registry.set_status(run_id, "running")
        return self._drive(record, graph, plan, show_progress, on_event, review, stop)

    def _drive(
        self,
        record: RunRecord,
        graph: CompiledStateGraph,
        plan: RunPlan,
        show_progress: bool,
        on_event: EventSink | None = None,
        review: Reviewer | None = None,
        stop: threading.Event | None = None,
    ) -> RunOutcome:
        config, spec = plan.config, plan.topology
        cfg = thread_config(record.run_id, config)
        state = saved_state(self.storage, record.run_id, full_history=False)
        next_input: Any = None
        start_cfg = cfg
        if not state:
            next_input = {
                "problem": record.problem,
                "gold_answer": record.gold_answer,
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
            final = after_finish(self, record, graph, cfg, plan, final)
        self.registry.set_status(record.run_id, status)
        return RunOutcome(record.run_id, final, paused)

    def status_of(self, record: RunRecord, state: dict[str, Any]) -> str:
        """The run's status (:func:`tmas.lifecycle.run_status.run_status`)."""
        return run_status(record, state)


def iteration_end_node(spec: GraphSpec) -> str:
    """The node after which an iteration is over (where a reviewed run pauses, and from whose
    checkpoint a run is forked: a node type registered ``ends_iteration``); ValueError for
    topologies without iterations.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> iteration_end_node(load_bundled("tmas"))
        'record_iteration'
    """
    found = nodes_where(spec, "ends_iteration")
    if not found:
        raise ValueError(f"topology {spec.name!r} has no node that ends an iteration")
    return found[0]
