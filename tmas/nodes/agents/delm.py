"""Decentralised workers (DeLM): seed the task queue, work it in parallel, write the answer.

No orchestrator: every worker loops claim -> read the shared notes -> reason -> propose a
note (and maybe subtasks) -> verification gate -> write, on a task queue and a notes board in
the LangGraph Store of the run (``tmas.memory.shared_board``).
"""

from __future__ import annotations

import re
import time
from typing import Any

from tmas.answers.parsing import Parsed, extract_answer, parse_bullets
from tmas.llm.calls import Completion
from tmas.memory.shared_board import NoteBoard, TaskQueue
from tmas.nodes.common import AgentNode, issues_of
from tmas.nodes.context import NodeContext
from tmas.nodes.prompts import bullet_list, clip
from tmas.seeding import derive_seed
from tmas.state import RESET, Candidate, add_usage

_FIELD = re.compile(r"^\s*(note|evidence|subtask)\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def board_for_run() -> tuple[TaskQueue, NoteBoard]:
    """The queue and board of the running graph's thread (the store must be configured)."""
    from langgraph.config import get_config, get_store

    store = get_store()
    if store is None:
        raise ValueError("the delm topology needs a LangGraph store: compile with store=...")
    run = str(get_config()["configurable"].get("thread_id", "default"))
    namespace = ("delm", run)
    return TaskQueue(store, namespace), NoteBoard(store, namespace)


def parse_worker_reply(text: str) -> dict[str, Any]:
    """The note, evidence and subtasks of a worker's reply.

    Example:
        >>> parse_worker_reply("Note: x = 3\\nEvidence: 2x = 6\\nSubtask: find y")
        {'note': 'x = 3', 'evidence': '2x = 6', 'subtasks': ['find y']}
    """
    found: dict[str, Any] = {"note": "", "evidence": "", "subtasks": []}
    for name, value in _FIELD.findall(text or ""):
        key = name.lower()
        if key == "subtask":
            found["subtasks"].append(value)
        elif not found[key]:
            found[key] = value
    return found


class DelmSeed(AgentNode):
    """Node: fill the task queue once (one task per document, else LLM sub-questions); its
    prompts are ``planner_system`` and ``planner_user`` of its namespace (``delm/``)."""

    def __init__(self, ctx: NodeContext, max_tasks: int = 4) -> None:
        super().__init__(ctx)
        self.max_tasks = max_tasks

    def __call__(self, state: dict[str, Any]) -> dict[str, Any]:
        queue, _ = board_for_run()
        update: dict[str, Any] = {"iteration": 1, "candidates": [RESET]}
        if queue.all():  # already seeded (a resumed run): seeding is idempotent
            return update
        documents = state.get("documents") or []
        if documents:
            for i, document in enumerate(documents):
                queue.add(
                    f"Read document {i + 1} and note what answers the problem.",
                    added_by="seed",
                    payload={"document": document},
                )
            return update
        fields = {"problem": state["problem"], "max_tasks": str(self.max_tasks)}
        reply = self.ctx.complete(fields, seed=derive_seed(self.config.seed, "delm-plan"),
                                  user="planner_user", system="planner_system")  # fmt: skip
        parsed = parse_bullets(reply.text, max_items=self.max_tasks)
        for question in parsed.value or [state["problem"]]:  # type: ignore[union-attr]
            queue.add(question, added_by="seed")
        return {
            **update,
            "usage": reply.usage(self.role),
            "parse_issues": issues_of(
                parsed, iteration=1, role=self.role, index=-1, text=reply.text
            ),
        }

    def on_failure(self, state: dict[str, Any], error: str) -> dict[str, Any]:
        """A failed planning call: the problem itself becomes the only task."""
        queue, _ = board_for_run()
        if not queue.all():
            queue.add(state["problem"], added_by="seed")
        return {"iteration": 1, "candidates": [RESET]}


DELM_WORKER_STEPS = 4


class DelmWorker(AgentNode):
    """Node: one worker's loop over the shared queue, bounded by ``steps`` tasks; it reasons
    with ``worker_system``/``worker_user`` of its namespace (``delm/``), and its notes pass a
    gate whose judge plays ``judge_role`` (its model, budget and usage row)."""

    def __init__(
        self,
        ctx: NodeContext,
        *,
        steps: int = DELM_WORKER_STEPS,
        claim_ttl_s: float = 120.0,
        max_tasks: int = 12,
        max_note_chars: int = 600,
        poll_s: float = 0.05,
        judge_role: str = "verifier",
    ) -> None:
        from tmas.nodes.agents.delm_gate import VerificationGate

        super().__init__(ctx)
        router, config = ctx.router, ctx.config
        self.steps = steps
        self.claim_ttl_s = claim_ttl_s
        self.max_tasks = max_tasks
        self.poll_s = poll_s
        self.judge_role = judge_role
        self.gate = VerificationGate(
            router,
            role=judge_role,
            max_chars=max_note_chars,
            dedup_threshold=config.dedup_threshold,
            max_tokens=ctx.max_tokens_of(judge_role),
            prompt_set=self.prompts,
            similarity=config.similarity,
        )

    def _next_task(self, queue: TaskQueue, worker: str) -> dict[str, Any] | None:
        deadline = time.monotonic() + self.claim_ttl_s
        while True:
            task = queue.claim(worker, self.claim_ttl_s)
            if task is not None or queue.unfinished() == 0 or time.monotonic() > deadline:
                return task
            time.sleep(self.poll_s)

    def __call__(self, task_input: dict[str, Any]) -> dict[str, Any]:
        queue, board = board_for_run()
        worker = f"w{task_input.get('copy', 0)}"
        usage: dict[str, Any] = {}
        issues: list[dict[str, Any]] = []
        for step in range(self.steps):
            task = self._next_task(queue, worker)
            if task is None:
                break
            calls = self._work(task_input["problem"], task, queue, board, worker, step, issues)
            for role, call in calls:
                usage = add_usage(usage, call.usage(role))
            queue.complete(task["id"], worker)
        return {"usage": usage, "parse_issues": issues}

    def _work(
        self,
        problem: str,
        task: dict[str, Any],
        queue: TaskQueue,
        board: NoteBoard,
        worker: str,
        step: int,
        issues: list[dict[str, Any]],
    ) -> list[tuple[str, Completion]]:
        notes = [n["text"] for n in board.notes()]
        document = task["payload"].get("document")
        seed = derive_seed(self.config.seed, "delm", worker, task["id"], task["claims"])
        fields = {
            "problem": problem,
            "task": task["text"],
            "notes": bullet_list(notes),
            "document": f"Document:\n{clip(document, 4000)}\n\n" if document else "",
        }
        reply = self.ctx.complete(fields, seed=seed, user="worker_user", system="worker_system")
        found = parse_worker_reply(reply.text)
        calls: list[tuple[str, Completion]] = [(self.role, reply)]
        if not found["note"]:
            issues += issues_of(
                Parsed(None, "no Note line"),
                iteration=1,
                role=self.role,
                index=step,
                text=reply.text,
            )
            return calls
        for subtask in found["subtasks"][:2]:
            if len(queue.all()) < self.max_tasks:
                queue.add(subtask, added_by=worker)
        decision = self.gate.check(problem, found["note"], found["evidence"], notes, seed)
        if decision.judge_call is not None:
            calls.append((self.judge_role, decision.judge_call))
        if decision.accepted:
            board.write(found["note"], found["evidence"], worker=worker, task_id=task["id"])
        return calls


class DelmAnswer(AgentNode):
    """Node: write the answer from the shared notes, as the run's single candidate (prompts
    ``answer_system``/``answer_user`` of its namespace, ``delm/``)."""

    def __call__(self, state: dict[str, Any]) -> dict[str, Any]:
        _, board = board_for_run()
        notes = [n["text"] for n in board.notes()]
        fields = {"problem": state["problem"], "notes": bullet_list(notes)}
        reply = self.ctx.complete(fields, seed=derive_seed(self.config.seed, "delm-answer"),
                                  user="answer_user", system="answer_system")  # fmt: skip
        parsed = extract_answer(reply.text)
        candidate = answer_candidate(
            reply.text, parsed.value, reply.input_tokens, reply.output_tokens
        )
        return {
            "candidates": [candidate],
            "usage": reply.usage(self.role),
            "parse_issues": issues_of(
                parsed, iteration=1, role=self.role, index=0, text=reply.text
            ),
        }

    def on_failure(self, state: dict[str, Any], error: str) -> dict[str, Any]:
        """A failed answer call: the run's single candidate has no answer and keeps the error."""
        return {"candidates": [{**answer_candidate("", None, 0, 0), "error": error}]}


def answer_candidate(
    text: str, answer: str | None, input_tokens: int, output_tokens: int
) -> Candidate:
    """The run's single candidate, written from the shared notes.

    Example:
        >>> answer_candidate("so \\boxed{4}", "4", 10, 3)["answer"]
        '4'
    """
    return {
        "iteration": 1,
        "index": 0,
        "mode": "initial",
        "parent_index": None,
        "text": text,
        "answer": answer,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "experience_ids": [],
    }
