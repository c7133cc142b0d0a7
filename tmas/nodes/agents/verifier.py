"""The verification agent: one independent check of one candidate."""

from __future__ import annotations

from typing import Any

from tmas.answers.parsing import parse_verification
from tmas.config import TMASConfig
from tmas.llm.router import ModelCall
from tmas.nodes import prompts
from tmas.nodes.common import SteppedAgent, Steps, agent_update, live_candidates
from tmas.nodes.events import emit
from tmas.seeding import derive_seed
from tmas.state import RunState, Verification

CHARS_PER_TOKEN = 5


def verifier_chars(config: TMASConfig) -> int:
    """How much of a solution a verifier sees: all of it, as long as the solver may write.

    Example:
        >>> verifier_chars(TMASConfig(solver_max_tokens=2048))
        10240
    """
    return max(config.rollout_chars_in_prompt, CHARS_PER_TOKEN * config.solver_max_tokens)


def verification_tasks(state: RunState, config: TMASConfig) -> list[dict[str, Any]]:
    """N x M tasks: every candidate (but those whose solver call failed) checked
    ``n_verifications`` times.

    Example:
        >>> state = {"problem": "p", "iteration": 1,
        ...          "candidates": [{"index": 0, "text": "t"}, {"index": 1, "text": "u"},
        ...                         {"index": 2, "text": "", "error": "timeout"}]}
        >>> len(verification_tasks(state, TMASConfig(n_verifications=3)))
        6
    """
    tasks = []
    for candidate in live_candidates(state):
        for check in range(config.n_verifications):
            tasks.append(
                {
                    "problem": state["problem"],
                    "iteration": state["iteration"],
                    "candidate_index": candidate["index"],
                    "check_index": check,
                    "solution": prompts.clip(candidate["text"], verifier_chars(config)),
                }
            )
    return tasks


class Verify(SteppedAgent):
    """Node: check one candidate once and record verdict and score."""

    def steps(self, task: dict[str, Any]) -> Steps:
        seed = derive_seed(
            self.config.seed,
            "verify",
            task["iteration"],
            task["candidate_index"],
            task["check_index"],
        )
        kind = "proof_" if self.config.proof else ""
        reply = yield ModelCall(
            "verifier",
            self.prompts.render(f"verifier/{kind}system"),
            self.prompts.render(
                f"verifier/{kind}user", problem=task["problem"], solution=task["solution"]
            ),
            self.config.max_tokens_for("verifier"),
            seed,
            prompt=f"verifier/{kind}user",
        )
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
            "verifier",
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
            >>> node = Verify(ModelRouter(ScriptedChatModel()), TMASConfig())
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
