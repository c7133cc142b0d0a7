"""The verification agent: one independent check of one candidate."""

from __future__ import annotations

from typing import Any

from tmas.answers.parsing import parse_verification
from tmas.config import TMASConfig
from tmas.nodes import prompts
from tmas.nodes.common import SteppedAgent, Steps, agent_update, live_candidates
from tmas.nodes.events import emit
from tmas.nodes.tasks import TaskRequest
from tmas.seeding import derive_seed
from tmas.state import Verification

CHARS_PER_TOKEN = 5


def verifier_chars(config: TMASConfig, solver_budget: int) -> int:
    """How much of a solution a verifier sees: all of it, as long as the solver may write
    (``solver_budget`` tokens).

    Example:
        >>> verifier_chars(TMASConfig(), 2048), verifier_chars(TMASConfig(), 16)
        (10240, 2000)
    """
    return max(config.rollout_chars_in_prompt, CHARS_PER_TOKEN * solver_budget)


VERIFIER_PROMPTS: dict[str, tuple[str, ...]] = {
    "system": (),
    "user": (),
    "proof_system": (),
    "proof_user": (),
}
"""The verifier's templates; each is filled with the fields its task carries."""

VERIFICATION_TASK_FIELDS = ("problem", "iteration", "candidate_index", "check_index", "solution")
"""What every verification task carries."""


def verification_tasks(request: TaskRequest) -> list[dict[str, Any]]:
    """N x M tasks: every candidate (but those whose solver call failed) checked
    ``n_verifications`` times.

    Example:
        >>> state = {"problem": "p", "iteration": 1,
        ...          "candidates": [{"index": 0, "text": "t"}, {"index": 1, "text": "u"},
        ...                         {"index": 2, "text": "", "error": "timeout"}]}
        >>> len(verification_tasks(TaskRequest(state, TMASConfig(n_verifications=3))))
        6
    """
    state, config = request.state, request.config
    shown = verifier_chars(config, request.budget("solver"))
    tasks = []
    for candidate in live_candidates(state):
        for check in range(config.n_verifications):
            tasks.append(
                {
                    "problem": state["problem"],
                    "iteration": state["iteration"],
                    "candidate_index": candidate["index"],
                    "check_index": check,
                    "solution": prompts.clip(candidate["text"], shown),
                }
            )
    return tasks


class Verify(SteppedAgent):
    """Node: check one candidate once and record verdict and score; its prompts (``user`` and
    ``system``, ``proof_user`` and ``proof_system`` in a proof run) are filled with every
    field the task carries.

    Example:
        >>> from tmas.llm.router import ModelRouter
        >>> from tmas.nodes.context import NodeContext
        >>> from tmas.nodes.prompts import PromptSet
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> prompts = PromptSet({"verifier/user": "{solution} (critic: {critique})"})
        >>> model = ScriptedChatModel()
        >>> node = Verify(NodeContext(TMASConfig(), ModelRouter(model), prompts, "verifier"))
        >>> _ = node({"problem": "1+1?", "solution": "2", "critique": "fine", "iteration": 1,
        ...           "candidate_index": 0, "check_index": 0})
        >>> model.log[0].user
        '2 (critic: fine)'
    """

    def steps(self, task: dict[str, Any]) -> Steps:
        seed = derive_seed(
            self.config.seed,
            "verify",
            task["iteration"],
            task["candidate_index"],
            task["check_index"],
        )
        kind = "proof_" if self.config.proof else ""
        fields = prompts.prompt_fields(task)
        reply = yield self.ctx.ask(fields, seed=seed, user=f"{kind}user", system=f"{kind}system")
        parsed = parse_verification(reply.text)
        verdict, score = parsed.value  # type: ignore[misc]
        verification: Verification = {
            "iteration": task["iteration"],
            "candidate_index": task["candidate_index"],
            "check_index": task["check_index"],
            "text": reply.text,
            "verdict": verdict,
            "score": score,
        }
        emit(
            "verdict",
            iteration=task["iteration"],
            candidate_index=task["candidate_index"],
            check_index=task["check_index"],
            verdict=verdict,
            score=score,
        )
        return agent_update(
            "verifications",
            [verification],
            self.role,
            reply,
            parsed,
            iteration=task["iteration"],
            index=task["candidate_index"],
        )

    def on_failure(self, task: dict[str, Any], error: str) -> dict[str, Any]:
        """The check that stands for a failed verifier call: no verdict, no score, its error.

        Example:
            >>> from tmas.llm.router import ModelRouter
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> from tmas.nodes.context import NodeContext
            >>> node = Verify(NodeContext(TMASConfig(), ModelRouter(ScriptedChatModel())))
            >>> task = {"iteration": 1, "candidate_index": 0, "check_index": 1}
            >>> node.on_failure(task, "HTTP 500")["verifications"][0]["verdict"]
            'unknown'
        """
        verification: Verification = {
            "iteration": task["iteration"],
            "candidate_index": task["candidate_index"],
            "check_index": task["check_index"],
            "text": "",
            "verdict": "unknown",
            "score": None,
            "error": error,
        }
        return {"verifications": [verification]}
