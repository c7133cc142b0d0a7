"""Small helpers shared by the agent nodes."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from tmas.answers.parsing import Parsed, extract_answer
from tmas.config import TMASConfig
from tmas.llm.calls import Completion, ModelCall
from tmas.nodes.context import NodeContext
from tmas.nodes.events import emit
from tmas.nodes.prompts import PromptSet
from tmas.roles import Role
from tmas.state import Candidate, ParseIssue, RunState, failed

if TYPE_CHECKING:  # the router loads the model stack; nodes only name it
    from tmas.llm.router import ModelRouter


def issues_of(
    parsed: Parsed, *, iteration: int, role: str, index: int, text: str
) -> list[ParseIssue]:
    """A one-item ``parse_issues`` update when ``parsed`` records a problem, else ``[]``.

    Example:
        >>> issues_of(Parsed(None, "no answer found"), iteration=1, role="solver", index=0,
        ...           text="garbage")[0]["problem"]
        'no answer found'
    """
    if parsed.problem is None:
        return []
    return [
        {
            "iteration": iteration,
            "role": role,
            "index": index,
            "problem": parsed.problem,
            "excerpt": text[-160:],
        }
    ]


def agent_update(
    key: str,
    items: list[Any],
    role: Role,
    reply: Completion,
    parsed: Parsed,
    *,
    iteration: int,
    index: int,
) -> dict[str, Any]:
    """The state update of one agent call: its items under ``key``, its usage and, when the
    reply broke the format, the parse issue.

    Example:
        >>> update = agent_update("candidates", [], "solver", Completion("??", 3, 1),
        ...                       Parsed(None, "no answer found"), iteration=1, index=0)
        >>> update["usage"]["solver"]["calls"], update["parse_issues"][0]["problem"]
        (1, 'no answer found')
    """
    return {
        key: items,
        "usage": reply.usage(role),
        "parse_issues": issues_of(
            parsed, iteration=iteration, role=role, index=index, text=reply.text
        ),
    }


def answer_update(
    plan: dict[str, Any], reply: Completion, role: Role, experience_ids: list[str] | None = None
) -> dict[str, Any]:
    """The state update of one call that answers a plan: its candidate (announced as a live
    ``candidate`` event), the call's usage and, when the reply broke the format, the parse
    issue.

    Example:
        >>> plan = {"iteration": 1, "index": 0, "mode": "initial", "parent_index": None}
        >>> update = answer_update(plan, Completion("so \\\\boxed{5}", 20, 4), "judger")
        >>> update["candidates"][0]["answer"], update["usage"]["judger"]["calls"]
        ('5', 1)
    """
    parsed = extract_answer(reply.text)
    candidate: Candidate = {
        "iteration": plan["iteration"],
        "index": plan["index"],
        "mode": plan["mode"],
        "parent_index": plan.get("parent_index"),
        "text": reply.text,
        "answer": parsed.value,  # type: ignore[typeddict-item]
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "experience_ids": list(experience_ids or []),
        "references": list(plan.get("references", [])),
    }
    emit(
        "candidate",
        iteration=plan["iteration"],
        index=plan["index"],
        mode=plan["mode"],
        answer=parsed.value,
        output_tokens=reply.output_tokens,
    )
    return agent_update(
        "candidates",
        [candidate],
        role,
        reply,
        parsed,
        iteration=plan["iteration"],
        index=plan["index"],
    )


def live_candidates(state: RunState) -> list[Candidate]:
    """The iteration's candidates whose solver call did not fail, in index order.

    Example:
        >>> [c["index"] for c in live_candidates({"candidates": [
        ...     {"index": 1}, {"index": 0}, {"index": 2, "error": "HTTP 500"}]})]
        [0, 1]
    """
    candidates = [c for c in state.get("candidates", []) if not failed(c)]  # type: ignore[arg-type]
    return sorted(candidates, key=lambda c: c["index"])


class AgentNode:
    """Base of the nodes that call a model: built with the node's :class:`NodeContext` (the
    run's config, models and prompts, and the node's role).

    Example:
        >>> from tmas.llm.router import ModelRouter
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> node = AgentNode(NodeContext(TMASConfig(), ModelRouter(ScriptedChatModel())))
        >>> node.prompts.has("solver/system"), node.role
        (True, 'solver')
    """

    def __init__(self, ctx: NodeContext) -> None:
        self.ctx = ctx

    @property
    def router(self) -> ModelRouter:
        """The node's models."""
        return self.ctx.router

    @property
    def config(self) -> TMASConfig:
        """The run's settings."""
        return self.ctx.config

    @property
    def prompts(self) -> PromptSet:
        """The run's templates."""
        return self.ctx.prompts

    @property
    def role(self) -> str:
        """The node's role: its model, budget, usage row and prompt namespace."""
        return self.ctx.role


Steps = Generator[ModelCall, Completion, dict[str, Any]]


class SteppedAgent(AgentNode):
    """An agent written once for both ways a graph runs: its :meth:`steps` yields each
    :class:`ModelCall` it needs and receives the reply, then returns its state update. Called
    plainly (``graph.invoke``/``stream``) it makes its calls in the calling thread; awaited
    through :meth:`acall` (``graph.ainvoke``/``astream``) it makes them on the event loop.

    Example:
        >>> from tmas.llm.router import ModelRouter
        >>> import asyncio
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> class Echo(SteppedAgent):
        ...     def steps(self, task):
        ...         reply = yield ModelCall(self.role, "You solve.", task["q"], 8, 0)
        ...         return {"text": reply.text[:6]}
        >>> node = Echo(NodeContext(TMASConfig(), ModelRouter(ScriptedChatModel())))
        >>> node({"q": "1+1?"}) == asyncio.run(node.acall({"q": "1+1?"}))
        True
    """

    def steps(self, task: dict[str, Any]) -> Steps:
        """Yield each model call, receive its reply; return the state update."""
        raise NotImplementedError

    def __call__(self, task: dict[str, Any]) -> dict[str, Any]:
        steps = self.steps(task)
        try:
            call = next(steps)
            while True:
                call = steps.send(self.router.call(call))
        except StopIteration as done:
            return done.value

    async def acall(self, task: dict[str, Any]) -> dict[str, Any]:
        """The node on the running event loop: the same steps, each call awaited."""
        steps = self.steps(task)
        try:
            call = next(steps)
            while True:
                call = steps.send(await self.router.acall(call))
        except StopIteration as done:
            return done.value
