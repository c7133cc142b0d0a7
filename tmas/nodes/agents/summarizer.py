"""The summary agent: condenses the M verifications of one candidate into a short summary."""

from __future__ import annotations

from typing import Any

from tmas.nodes import prompts
from tmas.nodes.common import SteppedAgent, Steps, live_candidates
from tmas.nodes.control.voting import mean_score
from tmas.nodes.tasks import TaskRequest
from tmas.seeding import derive_seed
from tmas.state import Summary, failed

SUMMARY_PROMPTS: dict[str, tuple[str, ...]] = {"system": (), "user": ("answer", "reports")}
"""The summary agent's templates: the task's fields, its answer and its numbered reports."""

SUMMARY_TASK_FIELDS = ("problem", "iteration", "candidate_index", "answer", "reports", "scores")
"""What every summary task carries."""


def summary_tasks(request: TaskRequest) -> list[dict[str, Any]]:
    """One task per candidate (but failed ones), carrying its answer and its verification
    reports (failed checks give no report and no score).

    Example:
        >>> state = {"problem": "p", "iteration": 1, "candidates": [{"index": 0, "answer": "1"}],
        ...          "verifications": [{"candidate_index": 0, "check_index": 0, "text": "ok",
        ...                             "score": 0.8}]}
        >>> summary_tasks(TaskRequest(state))[0]["scores"]
        [0.8]
    """
    state, config = request.state, request.config
    tasks = []
    verifications = state.get("verifications", [])
    for candidate in live_candidates(state):
        mine = sorted(
            (
                v
                for v in verifications
                if v["candidate_index"] == candidate["index"] and not failed(v)
            ),
            key=lambda v: v["check_index"],
        )
        tasks.append(
            {
                "problem": state["problem"],
                "iteration": state["iteration"],
                "candidate_index": candidate["index"],
                "answer": candidate["answer"],
                "reports": [prompts.clip(v["text"], config.report_chars_in_prompt) for v in mine],
                "scores": [v["score"] for v in mine],
            }
        )
    return tasks


class Summarize(SteppedAgent):
    """Node: write the verification summary of one candidate."""

    def steps(self, task: dict[str, Any]) -> Steps:
        reports = "\n\n".join(f"Report {i + 1}:\n{text}" for i, text in enumerate(task["reports"]))
        fields = {**prompts.prompt_fields(task), "answer": task["answer"] or "(none)",
                  "reports": reports}  # fmt: skip
        seed = derive_seed(self.config.seed, "summary", task["iteration"], task["candidate_index"])
        reply = yield self.ctx.ask(fields, seed=seed)
        summary: Summary = {
            "iteration": task["iteration"],
            "candidate_index": task["candidate_index"],
            "text": reply.text.strip(),
            "mean_score": mean_score(task["scores"]),
        }
        return {"summaries": [summary], "usage": reply.usage(self.role)}

    def on_failure(self, task: dict[str, Any], error: str) -> dict[str, Any]:
        """The summary of a failed summary call: no text, the candidate's mean score, its error.

        Example:
            >>> from tmas.llm.router import ModelRouter
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> from tmas.nodes.context import NodeContext
            >>> from tmas.config import TMASConfig
            >>> node = Summarize(NodeContext(TMASConfig(), ModelRouter(ScriptedChatModel())))
            >>> node.on_failure({"iteration": 1, "candidate_index": 0, "scores": [0.5, 1.0]},
            ...                 "timeout")["summaries"][0]["mean_score"]
            0.75
        """
        summary: Summary = {
            "iteration": task["iteration"],
            "candidate_index": task["candidate_index"],
            "text": "",
            "mean_score": mean_score(task["scores"]),
            "error": error,
        }
        return {"summaries": [summary]}


class ReportsAsSummary:
    """Node: use a candidate's verification reports as its feedback, without a summary call.

    Self-refine and verify-refine repair a rollout from the reports themselves.

    Example:
        >>> node = ReportsAsSummary()
        >>> node({"candidate_index": 0, "iteration": 1, "answer": "3",
        ...       "reports": ["ok", "fine"], "scores": [1.0, 0.5]})["summaries"][0]["mean_score"]
        0.75
    """

    def __call__(self, task: dict[str, Any]) -> dict[str, Any]:
        text = "\n\n".join(f"Report {i + 1}: {r}" for i, r in enumerate(task["reports"]))
        summary: Summary = {
            "iteration": task["iteration"],
            "candidate_index": task["candidate_index"],
            "text": text,
            "mean_score": mean_score(task["scores"]),
        }
        return {"summaries": [summary]}
