"""A run's reasoning flow read back from its checkpoints, as plain data per iteration.

Each iteration's candidates, checks, summaries and banks are taken from the last checkpoint of
that iteration; its record (vote, scores) from
:func:`tmas.lifecycle.history.iteration_records`. Nothing is written to the run database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from tmas.answers.parsing import normalize_answer
from tmas.graphs.run_plan import saved_plan
from tmas.lifecycle.history import iteration_records, latest_run_states, saved_state
from tmas.lifecycle.manager import RunManager
from tmas.memory.banks import remembered_items
from tmas.nodes.control.selection_rules import DEFAULT_SELECTION, selection_of
from tmas.state import Candidate, Experience, Guideline, IterationRecord, Summary, Verification
from tmas.storage import Storage
from tmas.views.diagram_ascii import spec_to_ascii


@dataclass
class CandidateTrace:
    """One candidate with its checks, its summary and the experiences it was given.

    ``experiences`` pairs each given experience id with its text (None when not found).
    """

    candidate: Candidate
    verifications: list[Verification] = field(default_factory=list)
    summary: Summary | None = None
    experiences: list[tuple[str, str | None]] = field(default_factory=list)


@dataclass
class IterationTrace:
    """Everything one iteration produced; ``saved`` is False for an iteration known only from
    its record (a forked run's iterations before the fork point)."""

    iteration: int
    candidates: list[CandidateTrace] = field(default_factory=list)
    experiences_added: list[Experience] = field(default_factory=list)
    guidelines_added: list[Guideline] = field(default_factory=list)
    record: IterationRecord | None = None
    saved: bool = True

    @property
    def agreement(self) -> float | None:
        """Share of the candidates that gave the voted answer (None before the vote)."""
        if self.record is None:
            return None
        return agreement(self.record["answers"], self.record["voted_answer"])


@dataclass
class RunTrace:
    """A run's header (from the registry) and its iterations, oldest first."""

    run_id: str
    problem: str = ""
    gold_answer: str | None = None
    graph: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    parent_run_id: str | None = None
    status: str = ""
    final_answer: str | None = None
    selection: str = DEFAULT_SELECTION
    stop_reason: str | None = None
    iterations: list[IterationTrace] = field(default_factory=list)
    plan_choice: dict[str, Any] | None = None
    diagram: str = ""
    memory_items: list[dict[str, Any]] = field(default_factory=list)
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each role's binding in the run's plan (model, budget, temperature, ...)."""
    channels: dict[str, Any] = field(default_factory=dict)
    """The value of each state channel of the run's plan, as the run left it."""


def agreement(answers: list[str | None], voted: str | None) -> float | None:
    """Share of ``answers`` equal to ``voted`` (compared as the vote compares them).

    Example:
        >>> agreement(["18", "18.0", "17", None], "18")
        0.5
        >>> agreement([], "18") is None, agreement(["1"], None)
        (True, 0.0)
    """
    if not answers:
        return None
    key = normalize_answer(voted)
    if key is None:
        return 0.0
    return sum(normalize_answer(a) == key for a in answers) / len(answers)


def iteration_states(checkpointer: BaseCheckpointSaver, run_id: str) -> dict[int, dict[str, Any]]:
    """The state saved last in each iteration of the latest run on thread ``run_id``, by
    iteration (oldest first).

    Read with :func:`tmas.lifecycle.history.latest_run_states`.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> from tmas import build_tmas_graph
        >>> from tmas.config import TMASConfig
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> saver = InMemorySaver()
        >>> graph = build_tmas_graph(TMASConfig(n_candidates=2, n_verifications=1,
        ...     max_iterations=2), llm=ScriptedChatModel(), checkpointer=saver)
        >>> _ = graph.invoke({"problem": "9+9?"}, {"configurable": {"thread_id": "t"}})
        >>> {k: len(v["candidates"]) for k, v in iteration_states(saver, "t").items()}
        {1: 2, 2: 2}
    """
    states: dict[int, dict[str, Any]] = {}
    for values in latest_run_states(checkpointer, run_id):
        iteration = values.get("iteration", 0)
        if iteration >= 1:
            states.setdefault(iteration, values)
    return dict(sorted(states.items()))


def _candidates(state: dict[str, Any], given_bank: list[Experience]) -> list[CandidateTrace]:
    texts = {item["id"]: item["text"] for item in given_bank}
    traces = []
    for candidate in sorted(state.get("candidates", []), key=lambda c: c["index"]):
        index = candidate["index"]
        checks = [v for v in state.get("verifications", []) if v["candidate_index"] == index]
        summaries = [s for s in state.get("summaries", []) if s["candidate_index"] == index]
        traces.append(
            CandidateTrace(
                candidate=candidate,
                verifications=sorted(checks, key=lambda v: v["check_index"]),
                summary=summaries[-1] if summaries else None,
                experiences=[(i, texts.get(i)) for i in candidate.get("experience_ids", [])],
            )
        )
    return traces


def collect_iterations(checkpointer: BaseCheckpointSaver, run_id: str) -> list[IterationTrace]:
    """Every iteration of the latest run on thread ``run_id``, oldest first.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> from tmas import build_tmas_graph
        >>> from tmas.config import TMASConfig
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> saver = InMemorySaver()
        >>> graph = build_tmas_graph(TMASConfig(n_candidates=2, n_verifications=1,
        ...     max_iterations=2), llm=ScriptedChatModel(), checkpointer=saver)
        >>> _ = graph.invoke({"problem": "9+9?"}, {"configurable": {"thread_id": "t"}})
        >>> [(it.iteration, len(it.candidates), it.record is not None)
        ...  for it in collect_iterations(saver, "t")]
        [(1, 2, True), (2, 2, True)]
    """
    states = iteration_states(checkpointer, run_id)
    records = {r["iteration"]: r for r in iteration_records(checkpointer, run_id)}
    traces = []
    for k in sorted(set(states) | set(records)):
        state = states.get(k, {})
        given_bank = states.get(k - 1, {}).get("experience_bank", []) + remembered_items(state)
        traces.append(
            IterationTrace(
                iteration=k,
                candidates=_candidates(state, given_bank),
                experiences_added=[
                    e for e in state.get("experience_bank", []) if e["iteration"] == k
                ],
                guidelines_added=[
                    g for g in state.get("guideline_bank", []) if g["iteration"] == k
                ],
                record=records.get(k),
                saved=k in states,
            )
        )
    return traces


def collect_trace(storage: Storage, run_id: str) -> RunTrace:
    """The trace of run ``run_id``: registry header, final answer and every iteration
    (:class:`tmas.storage.run_registry.UnknownRunError` when no run has this id).

    Example:
        >>> import os, tempfile
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.graphs.run_plan import plan_run
        >>> from tmas.llm.backend import BackendSpec
        >>> from tmas.llm.router import ModelRouter
        >>> from tmas.lifecycle.manager import RunManager
        >>> from tmas.storage import open_storage
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> storage = open_storage(os.path.join(tempfile.mkdtemp(), "runs.sqlite"))
        >>> manager = RunManager(storage, router_factory=lambda plan:
        ...     ModelRouter(ScriptedChatModel()))
        >>> plan = plan_run(load_bundled("tmas"), {"n_candidates": 2, "n_verifications": 1,
        ...                 "max_iterations": 2}, BackendSpec(kind="custom", model="scripted"))
        >>> _ = manager.start("r1", problem="9+9?", gold_answer="18", plan=plan,
        ...                   show_progress=False)
        >>> trace = collect_trace(storage, "r1")
        >>> trace.status, [it.iteration for it in trace.iterations]
        ('finished', [1, 2])
        >>> storage.close()
    """
    record = storage.registry.get(run_id)
    plan = saved_plan(record)
    state = saved_state(storage, run_id, full_history=False)
    config = plan.config.model_dump(mode="json")
    return RunTrace(
        run_id=run_id,
        problem=record.problem,
        gold_answer=record.gold_answer,
        graph=record.graph,
        config=config,
        parent_run_id=record.parent_run_id,
        status=RunManager(storage).status_of(record, state),
        final_answer=state.get("final_answer"),
        selection=selection_of(state, config),
        stop_reason=state.get("stop_reason"),
        iterations=(iterations := collect_iterations(storage.checkpointer, run_id)),
        memory_items=_seeded(storage, run_id, iterations),
        plan_choice=record.provenance.get("plan_choice"),
        diagram=spec_to_ascii(plan.topology),
        roles={role: binding.model_dump() for role, binding in plan.bindings.items()},
        channels={name: state.get(name) for name in plan.channels},
    )


def _seeded(storage: Storage, run_id: str, iterations: list[IterationTrace]) -> list[dict]:
    """The memory items a run started with (from its first iteration's state)."""
    if not iterations:
        return []
    first = iteration_states(storage.checkpointer, run_id).get(iterations[0].iteration, {})
    return remembered_items(first)
