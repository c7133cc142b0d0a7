"""Agents in a chain (LatentMAS's planner -> critic -> refiner -> judger): their prompts, the
record each leaves in the state, and the candidates the last one writes.

Every agent's prompt is the template ``mas/<agent>`` (fields ``problem`` and ``notes``) under
the system prompt ``mas/system`` (field ``agent``); a topology adds agents by naming new
templates in its ``prompts:`` block. Agents that pass text fill ``notes`` with what the agents
before them wrote; agents that pass latents leave it empty (the shared cache carries it).
The chain's records live in ``extras["agents"]``, one per agent, in order (the final agent's
record is the same for each of its answers).
"""

from __future__ import annotations

from typing import Any

from tmas.nodes.prompts import PromptSet
from tmas.nodes.tasks import TaskRequest
from tmas.state import RunState

AGENTS_KEY = "agents"


def agent_template(agent: str) -> str:
    """The user template of ``agent``.

    Example:
        >>> agent_template("critic")
        'mas/critic'
    """
    return f"mas/{agent}"


def missing_template(prompts: PromptSet, agent: str) -> str | None:
    """Why ``agent`` has no usable prompt (None when it has one).

    Example:
        >>> missing_template(PromptSet(), "nobody")
        "agent 'nobody' has no prompt template mas/nobody (add it under prompts:)"
    """
    if prompts.has(agent_template(agent)):
        return None
    return f"agent {agent!r} has no prompt template {agent_template(agent)} (add it under prompts:)"


def chain_records(state: RunState) -> list[dict[str, Any]]:
    """The records of the agents that ran before in this iteration, in order (each iteration
    runs the chain afresh).

    Example:
        >>> chain_records({"iteration": 2, "extras": {"agents": [
        ...     {"agent": "planner", "iteration": 1}, {"agent": "planner", "iteration": 2}]}})
        [{'agent': 'planner', 'iteration': 2}]
    """
    iteration = state.get("iteration", 0)
    records = (state.get("extras") or {}).get(AGENTS_KEY, [])
    return [r for r in records if r.get("iteration", 0) == iteration]


def notes_of(prompts: PromptSet, records: list[dict[str, Any]]) -> str:
    """The ``notes`` field of a text agent's prompt: what the agents before it wrote.

    Example:
        >>> print(notes_of(PromptSet(), [{"agent": "planner", "text": "Add them."}]), end="|")
        What the agents before you wrote:
        [planner]
        Add them.
        <BLANKLINE>
        |
    """
    written = [f"[{r['agent']}]\n{r['text'].strip()}" for r in records if r.get("text")]
    if not written:
        return ""
    return prompts.render("mas/notes", notes="\n\n".join(written)) + "\n\n"


def agent_messages(
    prompts: PromptSet, agent: str, problem: str, notes: str = ""
) -> list[dict[str, str]]:
    """The chat messages of one agent's turn.

    Example:
        >>> messages = agent_messages(PromptSet(), "planner", "What is 2 + 3?")
        >>> messages[0]["content"].startswith("You are the planner")
        True
    """
    return [
        {"role": "system", "content": prompts.render("mas/system", agent=agent)},
        {
            "role": "user",
            "content": prompts.render(agent_template(agent), problem=problem, notes=notes),
        },
    ]


def chain_answer_tasks(request: TaskRequest) -> list[dict[str, Any]]:
    """One task per plan of the iteration for the final agent: the problem, the plan and the
    chain's records (each answer is then saved on its own, and a resume redoes only those
    that were not).

    Example:
        >>> state = {"problem": "1+1?", "iteration": 1, "plans": [{"index": 0}, {"index": 1}]}
        >>> [t["plan"]["index"] for t in chain_answer_tasks(TaskRequest(state))]
        [0, 1]
    """
    state = request.state
    extras = {AGENTS_KEY: chain_records(state)}
    iteration = state.get("iteration", 0)
    return [
        {"problem": state["problem"], "iteration": iteration, "plan": plan, "extras": extras}
        for plan in state.get("plans", [])
    ]


def with_record(state: RunState, record: dict[str, Any]) -> dict[str, Any]:
    """The ``extras`` update that appends one agent's record to the chain.

    Example:
        >>> with_record({}, {"agent": "planner", "iteration": 0})
        {'extras': {'agents': [{'agent': 'planner', 'iteration': 0}]}}
    """
    return {"extras": {AGENTS_KEY: [*chain_records(state), record]}}
