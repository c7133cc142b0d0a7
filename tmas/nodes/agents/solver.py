"""The solution agent: writes one candidate in initial, exploit or explore mode."""

from __future__ import annotations

from typing import Any

from tmas.memory.banks import ORIGIN, relevant_experiences
from tmas.nodes import prompts
from tmas.nodes.common import SteppedAgent, Steps, answer_update
from tmas.nodes.control.planners import BUILTIN_MODES
from tmas.nodes.prompts import PromptSet
from tmas.nodes.tasks import TaskRequest
from tmas.state import Candidate

SOLVER_PROMPTS: dict[str, tuple[str, ...]] = {
    "system": (),
    "initial": (),
    "initial_memory": ("experiences",),
    "exploit": ("parent", "summary", "experiences"),
    "explore": ("guidelines",),
    "reference": ("references",),
    "aggregate": ("references",),
    "experience": ("experiences",),
    "proof_initial": (),
    "proof_initial_memory": ("experiences",),
    "proof_exploit": ("parent", "summary", "experiences"),
    "proof_explore": ("guidelines",),
    "*": ("parent", "summary", "experiences", "guidelines", "references"),
}
"""The solver's templates (by plan mode) and the fields it computes for each, beyond those its
task carries (``*``: the modes of plugins' planners)."""

SOLVER_TASK_FIELDS = ("problem", "plan")
"""What every solver task carries (a fan-out's ``with`` may add more)."""


def solver_tasks(request: TaskRequest) -> list[dict[str, Any]]:
    """One self-contained task per plan: the plan plus exactly the context its mode reads.

    Exploit tasks get their parent rollout, its verification summary and the experiences most
    related to it (remembered lessons among them); explore tasks get the guideline bank's own
    strategies (what this problem's attempts used; remembered items are lessons, not things
    to avoid); reference and aggregate tasks get the
    earlier rollouts they read (PaCoRe's cut to ``reference_chars``); experience tasks the
    experiences most related to the problem; initial tasks the problem only. A mode of a
    plugin's planner gets its parent and references when its plan names them, the related
    experiences and the guideline bank. Plans name earlier rollouts by candidate index.

    Example:
        >>> from tmas.nodes.control.iteration import plan_iteration
        >>> from tmas.config import TMASConfig
        >>> state = {"problem": "1+1?", "plans": plan_iteration(TMASConfig(), 1, [])}
        >>> [t["plan"]["mode"] for t in solver_tasks(TaskRequest(state))][:2]
        ['initial', 'initial']
    """
    state, config = request.state, request.config
    previous = {rollout["index"]: rollout for rollout in state.get("previous", [])}
    bank = state.get("experience_bank", [])
    tasks = []
    for plan in state.get("plans", []):
        mode = plan["mode"]
        custom = mode not in BUILTIN_MODES
        task: dict[str, Any] = {"problem": state["problem"], "plan": plan}
        if config.proof:
            task["proof"] = True
        if plan.get("parent_index") is not None and (mode == "exploit" or custom):
            task["parent"] = clipped(previous[plan["parent_index"]], config.rollout_chars_in_prompt)
        if plan.get("references") and (mode in ("reference", "aggregate") or custom):
            limit = config.rollout_chars_in_prompt
            if mode == "reference":
                limit = config.reference_chars
            task["references"] = [clipped(previous[i], limit) for i in plan["references"]]
        remembered = mode == "initial" and any(e.get("origin") == ORIGIN for e in bank)
        if mode in ("exploit", "experience") or custom or remembered:
            context = state["problem"] + ("\n" + task["parent"]["text"] if "parent" in task else "")
            task["experiences"] = relevant_experiences(
                bank, context, config.experiences_per_prompt, similarity=config.similarity
            )
        if mode == "explore" or custom:  # this problem's own strategies, never remembered ones
            own = [g for g in state.get("guideline_bank", []) if g.get("origin") != ORIGIN]
            task["guidelines"] = [g["text"] for g in own]
        tasks.append(task)
    return tasks


def solver_fields(task: dict[str, Any]) -> dict[str, str]:
    """The fields a solver task gives its prompt template: the problem, and the parent with its
    summary, the experiences, the guidelines or the references, as its mode read them.

    Example:
        >>> sorted(solver_fields({"problem": "1+1?", "guidelines": ["Count"]}))
        ['guidelines', 'problem']
    """
    fields = {"problem": task["problem"]}
    if "parent" in task:
        fields["parent"] = task["parent"]["text"]
        fields["summary"] = task["parent"]["summary"] or "(no summary)"
    if "experiences" in task:
        fields["experiences"] = prompts.bullet_list([e["text"] for e in task["experiences"]])
    if "guidelines" in task:
        fields["guidelines"] = prompts.bullet_list(task["guidelines"])
    if "references" in task:
        fields["references"] = reference_list(task["references"])
    return fields


PROOF_MODES = ("initial", "exploit", "explore")  # the modes with proof templates


def solver_prompt_name(task: dict[str, Any]) -> str:
    """The name of a solver task's user template in its node's namespace: the plan's mode; a
    first-iteration task shown items of a lifelong memory uses ``initial_memory``; a task of a
    proof run, ``proof_<mode>`` (initial, exploit, explore; ``proof_initial_memory``).

    Example:
        >>> solver_prompt_name({"plan": {"mode": "initial"}, "experiences": [{"text": "x"}]})
        'initial_memory'
        >>> solver_prompt_name({"plan": {"mode": "exploit"}, "proof": True})
        'proof_exploit'
    """
    mode = task["plan"]["mode"]
    kind = "proof_" if task.get("proof") and mode in PROOF_MODES else ""
    if mode == "initial" and task.get("experiences"):
        return f"{kind}initial_memory"
    return f"{kind}{mode}"


def solver_template(task: dict[str, Any]) -> str:
    """The built-in solver's template of a task: ``solver/`` and :func:`solver_prompt_name`.

    Example:
        >>> solver_template({"plan": {"mode": "exploit"}, "proof": True})
        'solver/proof_exploit'
    """
    return f"solver/{solver_prompt_name(task)}"


def solver_prompt_fields(task: dict[str, Any]) -> dict[str, str]:
    """Every field a solver task carries (:func:`tmas.nodes.prompts.prompt_fields`), with the
    problem, parent, summary, experiences, guidelines and references as :func:`solver_fields`
    writes them.

    Example:
        >>> solver_prompt_fields({"problem": "1+1?", "plan": {"mode": "initial"},
        ...                       "hint": "count"})["hint"]
        'count'
    """
    return {**prompts.prompt_fields(task), **solver_fields(task)}


def solver_prompt(task: dict[str, Any], prompt_set: PromptSet | None = None) -> str:
    """The user prompt of a solver task: its template (:func:`solver_template`) filled with
    :func:`solver_prompt_fields`.

    Example:
        >>> solver_prompt({"problem": "1+1?", "plan": {"mode": "initial"}}).startswith("Problem")
        True
    """
    return (prompt_set or PromptSet()).render(solver_template(task), **solver_prompt_fields(task))


def clipped(rollout: dict[str, Any], limit: int) -> dict[str, Any]:
    """``rollout`` with its text cut to its last ``limit`` characters.

    Example:
        >>> clipped({"index": 0, "text": "abcdefgh"}, 6)["text"]
        '...fgh'
    """
    return {**rollout, "text": prompts.clip(rollout["text"], limit)}


def reference_list(rollouts: list[dict[str, Any]]) -> str:
    """Earlier rollouts as numbered references: each one's answer and its (clipped) text.

    Example:
        >>> print(reference_list([{"answer": "18", "text": "so 9 + 9 = 18"}]))
        Solution 1 (answer: 18):
        so 9 + 9 = 18
    """
    return "\n\n".join(
        f"Solution {i + 1} (answer: {r.get('answer') or 'none'}):\n{r['text']}"
        for i, r in enumerate(rollouts)
    )


class Solve(SteppedAgent):
    """Node: run one solver task and add its candidate to the iteration; its prompt is the
    template of the plan's mode in the node's namespace (:func:`solver_prompt_name`), filled
    with every field the task carries.

    Example:
        >>> from tmas.llm.router import ModelRouter
        >>> from tmas.nodes.context import NodeContext
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> from tmas.config import TMASConfig
        >>> node = Solve(NodeContext(TMASConfig(), ModelRouter(ScriptedChatModel())))
        >>> plan = {"iteration": 1, "index": 0, "mode": "initial", "parent_index": None, "seed": 1}
        >>> node({"problem": "1+1?", "plan": plan})["candidates"][0]["answer"] is not None
        True
    """

    def steps(self, task: dict[str, Any]) -> Steps:
        plan = task["plan"]
        call = self.ctx.ask(solver_prompt_fields(task), seed=plan["seed"],
                            user=solver_prompt_name(task))  # fmt: skip
        reply = yield call
        experience_ids = [e["id"] for e in task.get("experiences", [])]
        return answer_update(plan, reply, self.role, experience_ids)

    def on_failure(self, task: dict[str, Any], error: str) -> dict[str, Any]:
        """The candidate that stands for a failed solver call (:func:`failed_candidate`)."""
        return {"candidates": [failed_candidate(task, error)]}


def failed_candidate(task: dict[str, Any], error: str) -> Candidate:
    """The candidate that stands for a failed call of a task's plan: no text, no answer, its
    error.

    Example:
        >>> plan = {"iteration": 1, "index": 2, "mode": "initial", "parent_index": None}
        >>> failed = failed_candidate({"plan": plan}, "timeout")
        >>> failed["answer"], failed["error"]
        (None, 'timeout')
    """
    plan = task["plan"]
    return {
        "iteration": plan["iteration"],
        "index": plan["index"],
        "mode": plan["mode"],
        "parent_index": plan["parent_index"],
        "text": "",
        "answer": None,
        "input_tokens": 0,
        "output_tokens": 0,
        "experience_ids": [e["id"] for e in task.get("experiences", [])],
        "references": list(plan.get("references", [])),
        "error": error,
    }
