"""Wiring a spec's edges into a LangGraph graph: plain edges and joins, fan-outs (with the
channels they hand to their tasks) and loops with their stop conditions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from tmas.config import TMASConfig
from tmas.graphs import spec as spec_names
from tmas.graphs.spec import EdgeSpec, FanOut, GraphSpec
from tmas.graphs.validate import plain_sources
from tmas.nodes.channels import ChannelSpec
from tmas.nodes.control.stop_rules import (
    RecordStop,
    early_conditions,
    first_holding,
    run_finished,
)
from tmas.nodes.tasks import TaskRequest
from tmas.registration import registry


def endpoint(name: str) -> str:
    """LangGraph's name for a spec's node name (its START and END are LangGraph's own).

    Example:
        >>> endpoint("START") == START, endpoint("verify")
        (True, 'verify')
    """
    return {spec_names.START: START, spec_names.END: END}.get(name, name)


def fanout_payloads(
    fanout: FanOut,
    state: Mapping[str, Any],
    config: TMASConfig,
    channels: Mapping[str, ChannelSpec] | None = None,
    budgets: Mapping[str, int] | None = None,
) -> list[dict]:
    """The task payloads one fan-out edge sends (to each of its targets), each with the
    channels its ``with`` names (:func:`with_channels`); a task builder is asked with the run's
    ``budgets`` (each role's answer budget).

    Example:
        >>> fanout_payloads(FanOut(copies=2), {"problem": "p", "iteration": 1}, TMASConfig())
        [{'problem': 'p', 'iteration': 1, 'copy': 0}, {'problem': 'p', 'iteration': 1, 'copy': 1}]
    """
    base = {"problem": state.get("problem"), "iteration": state.get("iteration")}
    if fanout.tasks is not None:
        request = TaskRequest(dict(state), config, dict(budgets or {}))
        payloads = registry().tasks[fanout.tasks].build(request)
    elif fanout.over is not None:
        items = state.get(fanout.over) or []
        payloads = [{**base, "item": item, "index": i} for i, item in enumerate(items)]
    else:
        payloads = [{**base, "copy": i} for i in range(fanout.copies or 0)]
    return with_channels(payloads, fanout.with_, state, channels or {})


def candidate_of(task: Mapping[str, Any]) -> int | None:
    """The candidate a task is about: its ``candidate_index``, its plan's index, or (a chain's
    input) its single plan's index.

    Example:
        >>> candidate_of({"candidate_index": 2}), candidate_of({"plans": [{"index": 1}]})
        (2, 1)
    """
    if "candidate_index" in task:
        return task["candidate_index"]
    plans = [task["plan"]] if isinstance(task.get("plan"), dict) else task.get("plans") or []
    return plans[0].get("index") if len(plans) == 1 else task.get("index")


def with_channels(
    payloads: list[dict],
    fields: Mapping[str, str],
    state: Mapping[str, Any],
    channels: Mapping[str, ChannelSpec],
) -> list[dict]:
    """``payloads`` with each ``field`` set to its channel's value in ``state``; a ``keyed``
    channel gives each task the entry of its candidate (:func:`candidate_of`), None without one.

    Example:
        >>> critiques = {"critiques": ChannelSpec("critiques", "keyed")}
        >>> with_channels([{"candidate_index": 1}], {"critique": "critiques"},
        ...               {"critiques": {"1": "check the sum"}}, critiques)
        [{'candidate_index': 1, 'critique': 'check the sum'}]
    """
    if not fields:
        return payloads
    for payload in payloads:
        for field, channel in fields.items():
            value = state.get(channel)
            spec = channels.get(channel)
            if spec is not None and spec.reducer == "keyed":
                value = (value or {}).get(str(candidate_of(payload)))
            payload[field] = value
    return payloads


def stop_node(source: str) -> str:
    """The name of the node through which the loop leaving ``source`` exits when a condition
    other than ``run_finished`` ended it (it records the stop reason). A loop also ends once a
    node set a stop reason, whether or not its ``until`` lists ``run_finished``.

    Example:
        >>> stop_node("record_iteration")
        'record_iteration.stop'
    """
    return f"{source}.stop"


def _add_loop(graph: StateGraph, edge: EdgeSpec) -> None:
    source, back_to, exit_to = endpoint(edge.source), edge.targets[0], endpoint(edge.exit)
    early = early_conditions(edge.conditions)
    via = stop_node(edge.source)
    if early:  # the stop node exists only where a condition can end the loop early
        graph.add_node(via, RecordStop(early))
        graph.add_edge(via, exit_to)

    def route(state: dict[str, Any]) -> str:
        if run_finished(state):  # a node set the stop reason (max_iterations): done
            return exit_to
        return via if first_holding(early, state) else back_to

    graph.add_conditional_edges(source, route, [back_to, exit_to, *([via] if early else [])])


def add_edge(
    graph: StateGraph,
    edge: EdgeSpec,
    config: TMASConfig,
    channels: Mapping[str, ChannelSpec],
    kept_out: Mapping[str, frozenset[str]],
    budgets: Mapping[str, int] | None = None,
) -> None:
    """Wire a fan-out or loop edge; ``kept_out`` names, per target, the channels its tasks must
    not carry (those a pipeline body writes itself: its writes come back to the run once);
    ``budgets`` are the run's answer budgets by role (what task builders are asked with)."""
    if edge.until is not None:
        _add_loop(graph, edge)
    elif edge.fanout is not None:
        source = endpoint(edge.source)
        targets = [endpoint(t) for t in edge.targets]
        fanout = edge.fanout

        def route(state: dict[str, Any]) -> list[Send]:
            payloads = fanout_payloads(fanout, state, config, channels, budgets)
            return [
                Send(t, {k: v for k, v in p.items() if k not in kept_out.get(t, ())})
                for p in payloads
                for t in targets
            ]

        graph.add_conditional_edges(source, route, targets)


def add_plain_edges(graph: StateGraph, spec: GraphSpec) -> None:
    """One edge per target: from its only source, or a join that waits for all of them."""
    for target, sources in plain_sources(spec).items():
        ends = [endpoint(source) for source in sources]
        graph.add_edge(ends[0] if len(ends) == 1 else ends, endpoint(target))
