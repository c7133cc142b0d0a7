"""Saved runs as RL training rows: one row per solver call, with the exact chat messages it
sent, in verl's layout (``prompt``, ``data_source``, ``ability``, ``reward_model``,
``extra_info``) plus ``_source``, the reward kind of the hybrid scheme.

The messages are rebuilt from what the run checkpointed: each solver call's task (the Send
packet LangGraph saved before the call ran, or the one a candidate's pipeline made from its
own packet) rendered with the run's own prompt templates, as the solver node rendered it.
Nothing is written to the run database.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from tmas.config import TMASConfig
from tmas.graphs.catalog import TASK_BUILDERS
from tmas.graphs.pipeline import bodies
from tmas.graphs.spec import parse_spec
from tmas.lifecycle.history import latest_run_states
from tmas.nodes.agents.solver import solver_prompt
from tmas.nodes.prompts import PromptSet
from tmas.storage import Storage
from tmas.storage.run_registry import RunRecord

SOURCE_OF_MODE = {
    "initial": "normal",
    "exploit": "experience",
    "experience": "experience",
    "explore": "guideline",
}
DATA_SOURCE = {"normal": "math", "experience": "math", "guideline": "math_grm"}
SOLVER_NODE_TYPE = "solve"
TASKS_CHANNEL = "__pregel_tasks"


@dataclass
class RolloutExport:
    """The rows exported, and what was left out (by reason) and from how many runs."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    runs: int = 0

    def describe(self) -> str:
        """One line for humans.

        Example:
            >>> RolloutExport(rows=[{}], skipped=Counter({"no gold answer": 2}), runs=1).describe()
            '1 row(s) from 1 run(s); skipped: 2 no gold answer'
        """
        line = f"{len(self.rows)} row(s) from {self.runs} run(s)"
        if self.skipped:
            reasons = sorted(self.skipped.items())
            line += "; skipped: " + ", ".join(f"{n} {why}" for why, n in reasons)
        return line


def solver_node_ids(record: RunRecord) -> set[str]:
    """The ids of the run's solver nodes (type ``solve``) in its saved topology.

    Example:
        >>> from tmas.storage.run_registry import RunRecord
        >>> nodes = [{"id": "solve", "type": "solve"}, {"id": "v", "type": "verify"}]
        >>> record = RunRecord("r", 0.0, "1+1?", None, "tmas", {}, {}, None, "done", None, None,
        ...     topology={"nodes": nodes})
        >>> solver_node_ids(record)
        {'solve'}
    """
    topology = record.topology or {}
    nodes = (topology.get("spec") or topology).get("nodes") or [
        {"id": "solve", "type": SOLVER_NODE_TYPE}
    ]
    return {node["id"] for node in nodes if node.get("type") == SOLVER_NODE_TYPE}


TaskMaker = Callable[[dict[str, Any]], list[dict[str, Any]]]


def solver_task_makers(record: RunRecord) -> dict[str, TaskMaker]:
    """For each node the run sent solver work to, how its saved Send packet gives the solver
    tasks: a solver node's packet is its task; a pipeline's (one candidate's chain input) gives
    them through the task builder its body's fan-out into a solver uses, as the chain made them.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.storage.run_registry import RunRecord
        >>> record = RunRecord("r", 0.0, "1+1?", None, "tmas", {}, {}, None, "done", None, None,
        ...     topology={"spec": load_bundled("tmas").model_dump(by_alias=True)})
        >>> sorted(solver_task_makers(record))
        ['candidate']
    """
    topology = record.topology or {}
    spec_data = topology.get("spec") or topology
    makers: dict[str, TaskMaker] = {node: lambda arg: [arg] for node in solver_node_ids(record)}
    if not spec_data.get("edges"):
        return makers
    config = TMASConfig(**(record.config or {}))
    for node_id, body in bodies(parse_spec({"name": "run", **spec_data})).items():
        solvers = {node.id for node in body.nodes if node.type == SOLVER_NODE_TYPE}
        builders = [
            TASK_BUILDERS[edge.fanout.tasks]
            for edge in body.edges
            if edge.fanout and edge.fanout.tasks in TASK_BUILDERS and solvers & set(edge.targets)
        ]
        if builders:
            makers[node_id] = lambda arg, build=builders[0]: build(arg, config)
    return makers


def solver_calls(
    checkpointer: BaseCheckpointSaver, run_id: str, makers: dict[str, TaskMaker]
) -> tuple[list[dict[str, Any]], dict[tuple[int, int], dict[str, Any]]]:
    """The solver tasks the run sent (oldest first, one per iteration and candidate) and its
    candidates by (iteration, index)."""
    tasks: dict[tuple[int, int], dict[str, Any]] = {}
    candidates: dict[tuple[int, int], dict[str, Any]] = {}
    for values in latest_run_states(checkpointer, run_id):
        for send in values.get(TASKS_CHANNEL) or []:
            make = makers.get(getattr(send, "node", None))
            if make is None or not isinstance(send.arg, dict):
                continue
            for task in make(send.arg):
                plan = task.get("plan", {})
                tasks.setdefault((plan.get("iteration", 0), plan.get("index", 0)), task)
        for candidate in values.get("candidates") or []:
            candidates.setdefault((candidate["iteration"], candidate["index"]), candidate)
    return [tasks[key] for key in sorted(tasks)], candidates


def rollout_row(
    task: dict[str, Any],
    prompts: PromptSet,
    record: RunRecord,
    candidate: dict[str, Any] | None,
) -> dict[str, Any]:
    """One training row for a solver task of run ``record``.

    Example:
        >>> from tmas.storage.run_registry import RunRecord
        >>> record = RunRecord("r", 0.0, "1+1?", "2", "tmas", {}, {}, None, "done", None, None)
        >>> task = {"problem": "1+1?", "guidelines": ["Count"],
        ...         "plan": {"iteration": 2, "index": 1, "mode": "explore"}}
        >>> row = rollout_row(task, PromptSet(), record, None)
        >>> row["_source"], row["data_source"], row["reward_model"], row["prompt"][1]["role"]
        ('guideline', 'math_grm', {'ground_truth': '2', 'style': 'model'}, 'user')
    """
    plan = task["plan"]
    source = SOURCE_OF_MODE[plan["mode"]]
    parent = task.get("parent") or {}
    messages = [
        {"role": "system", "content": prompts.render("solver/system")},
        {"role": "user", "content": solver_prompt(task, prompts)},
    ]
    return {
        "prompt": messages,
        "data_source": DATA_SOURCE[source],
        "ability": "math",
        "reward_model": {
            "ground_truth": str(record.gold_answer),
            "style": "model" if source == "guideline" else "rule",
        },
        "extra_info": {
            "run_id": record.run_id,
            "iteration": int(plan["iteration"]),
            "candidate_index": int(plan["index"]),
            "mode": plan["mode"],
            "problem": task["problem"],
            "experiences": [item["text"] for item in task.get("experiences", [])],
            "guidelines": list(task.get("guidelines", [])),
            "_source": source,  # verl hands the reward only extra_info, not the row's columns
            "parent_attempt": parent.get("text") or "",
            "parent_answer": parent.get("answer") or "",
            "parent_summary": parent.get("summary") or "",
            "response": (candidate or {}).get("text") or "",
            "response_answer": (candidate or {}).get("answer") or "",
        },
        "_source": source,
    }


def export_runs(storage: Storage, run_ids: Iterable[str]) -> RolloutExport:
    """Every solver call of the runs ``run_ids`` as training rows; calls of runs without a gold
    answer and of modes outside the hybrid scheme (reference, aggregate, a plugin's) are
    counted in ``skipped`` instead. ``LookupError`` for an unknown run.

    Example:
        >>> import tempfile, os
        >>> from tmas.storage import open_storage
        >>> storage = open_storage(os.path.join(tempfile.mkdtemp(), "runs.sqlite"))
        >>> export_runs(storage, []).describe()
        '0 row(s) from 0 run(s)'
    """
    export = RolloutExport()
    for run_id in dict.fromkeys(run_ids):
        record = storage.registry.get(run_id)
        export.runs += 1
        tasks, candidates = solver_calls(storage.checkpointer, run_id, solver_task_makers(record))
        prompts = PromptSet((record.topology or {}).get("prompts") or {})
        for task in tasks:
            plan = task["plan"]
            if record.gold_answer in (None, ""):
                export.skipped["no gold answer"] += 1
            elif plan["mode"] not in SOURCE_OF_MODE:
                export.skipped[f"{plan['mode']} calls"] += 1
            else:
                candidate = candidates.get((plan["iteration"], plan["index"]))
                export.rows.append(rollout_row(task, prompts, record, candidate))
    for number, row in enumerate(export.rows):
        row["extra_info"]["index"] = number
    return export
