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

from tmas.graphs.pipeline import bodies
from tmas.graphs.run_plan import RunPlan, saved_plan
from tmas.lifecycle.history import latest_run_states
from tmas.nodes.agents.solver import solver_prompt_fields, solver_prompt_name
from tmas.nodes.prompts import PromptSet
from tmas.nodes.tasks import TaskRequest
from tmas.registration import registry
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


@dataclass(frozen=True)
class SolverSource:
    """A node the run sent solver work to: how its saved Send packet gives the solver tasks,
    and the role of the solver node that made those calls (whose templates it rendered)."""

    make: Callable[[dict[str, Any]], list[dict[str, Any]]]
    role: str = "solver"


def solver_sources(plan: RunPlan) -> dict[str, SolverSource]:
    """For each node the run sent solver work to (type ``solve``, or a pipeline whose body
    holds one), how its saved Send packet gives the solver tasks: a solver node's packet is its
    task; a pipeline's (one candidate's chain input) gives them through the task builder its
    body's fan-out into a solver uses, as the chain made them.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.graphs.run_plan import plan_run
        >>> from tmas.llm.backend import BackendSpec
        >>> sources = solver_sources(plan_run(load_bundled("tmas"), None,
        ...                                   BackendSpec(model="smollm2")))
        >>> sorted(sources), sources["candidate"].role
        (['candidate'], 'solver')
    """
    sources = {
        node.id: SolverSource(lambda arg: [arg], node.role or "solver")
        for node in plan.topology.nodes
        if node.type == SOLVER_NODE_TYPE
    }
    budgets = {role: binding.max_tokens for role, binding in plan.bindings.items()}
    for node_id, body in bodies(plan.topology).items():
        solvers = {node.id: node.role or "solver" for node in body.nodes
                   if node.type == SOLVER_NODE_TYPE}  # fmt: skip
        for edge in body.edges:
            fed = [target for target in edge.targets if target in solvers]
            if edge.fanout and edge.fanout.tasks in registry().tasks and fed:
                build = registry().tasks[edge.fanout.tasks].build
                sources[node_id] = SolverSource(
                    lambda arg, build=build: build(TaskRequest(arg, plan.config, budgets)),
                    solvers[fed[0]],
                )
                break
    return sources


def solver_calls(
    checkpointer: BaseCheckpointSaver, run_id: str, sources: dict[str, SolverSource]
) -> tuple[list[tuple[dict[str, Any], str]], dict[tuple[int, int], dict[str, Any]]]:
    """The solver tasks the run sent (oldest first, one per iteration and candidate), each with
    the role of the node that made its call, and its candidates by (iteration, index)."""
    tasks: dict[tuple[int, int], tuple[dict[str, Any], str]] = {}
    candidates: dict[tuple[int, int], dict[str, Any]] = {}
    for values in latest_run_states(checkpointer, run_id):
        for send in values.get(TASKS_CHANNEL) or []:
            source = sources.get(getattr(send, "node", None))
            if source is None or not isinstance(send.arg, dict):
                continue
            for task in source.make(send.arg):
                plan = task.get("plan", {})
                key = (plan.get("iteration", 0), plan.get("index", 0))
                tasks.setdefault(key, (task, source.role))
        for candidate in values.get("candidates") or []:
            candidates.setdefault((candidate["iteration"], candidate["index"]), candidate)
    return [tasks[key] for key in sorted(tasks)], candidates


def solver_messages(task: dict[str, Any], prompts: PromptSet, role: str = "solver") -> list:
    """The chat messages a solver node of ``role`` sent for ``task``, rendered with the run's
    templates as the node renders them (its role's own, else the solver's).

    Example:
        >>> task = {"problem": "1+1?", "plan": {"mode": "initial"}}
        >>> messages = solver_messages(task, PromptSet({"solver/system": "Be brief."}))
        >>> messages[0]["content"], messages[1]["content"].startswith("Problem")
        ('Be brief.', True)
    """
    system = prompts.key_for(role, "solver", "system")
    user = prompts.key_for(role, "solver", solver_prompt_name(task))
    return [
        {"role": "system", "content": prompts.render(system)},
        {"role": "user", "content": prompts.render(user, **solver_prompt_fields(task))},
    ]


def rollout_row(
    task: dict[str, Any],
    prompts: PromptSet,
    record: RunRecord,
    candidate: dict[str, Any] | None,
    role: str = "solver",
) -> dict[str, Any]:
    """One training row for a solver task of run ``record``, its prompt as a solver node of
    ``role`` rendered it with the run's ``prompts``.

    Example:
        >>> from tmas.storage.run_registry import RunRecord
        >>> record = RunRecord("r", 0.0, "1+1?", "2", "tmas", status="finished")
        >>> task = {"problem": "1+1?", "guidelines": ["Count"],
        ...         "plan": {"iteration": 2, "index": 1, "mode": "explore"}}
        >>> row = rollout_row(task, PromptSet(), record, None)
        >>> row["_source"], row["data_source"], row["reward_model"], row["prompt"][1]["role"]
        ('guideline', 'math_grm', {'ground_truth': '2', 'style': 'model'}, 'user')
    """
    plan = task["plan"]
    source = SOURCE_OF_MODE[plan["mode"]]
    parent = task.get("parent") or {}
    messages = solver_messages(task, prompts, role)
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
        >>> from tmas.lifecycle.run_database import open_runs
        >>> storage = open_runs(os.path.join(tempfile.mkdtemp(), "runs.sqlite"))
        >>> export_runs(storage, []).describe()
        '0 row(s) from 0 run(s)'
    """
    export = RolloutExport()
    for run_id in dict.fromkeys(run_ids):
        record = storage.registry.get(run_id)
        plan = saved_plan(record)
        export.runs += 1
        tasks, candidates = solver_calls(storage.checkpointer, run_id, solver_sources(plan))
        prompts = plan.prompt_set()  # the templates the run sent, overrides included
        for task, role in tasks:
            plan = task["plan"]
            if record.gold_answer in (None, ""):
                export.skipped["no gold answer"] += 1
            elif plan["mode"] not in SOURCE_OF_MODE:
                export.skipped[f"{plan['mode']} calls"] += 1
            else:
                candidate = candidates.get((plan["iteration"], plan["index"]))
                export.rows.append(rollout_row(task, prompts, record, candidate, role))
    for number, row in enumerate(export.rows):
        row["extra_info"]["index"] = number
    return export
