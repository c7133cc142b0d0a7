"""DeLM: claims are exclusive and expire, the gate keeps bad notes out of the shared context,
documents are split across workers and any worker may add subtasks."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from langgraph.store.memory import InMemoryStore

from tmas.api import build_graph
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.estimate import estimate_run_calls
from tmas.llm.router import ModelRouter
from tmas.memory.shared_board import NoteBoard, TaskQueue
from tmas.nodes.agents.delm_gate import deterministic_problems
from tmas.roles import Role
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies


def prompts_of(model: ScriptedChatModel) -> list[str]:
    """Every prompt the model answered, system and user text together."""
    return [f"{call.system}\n{call.user}" for call in model.log]


def run_delm(
    replies: ScriptedReplies, **state: Any
) -> tuple[dict, InMemoryStore, ScriptedChatModel]:
    model = ScriptedChatModel(replies=replies)
    store = InMemoryStore()
    graph = build_graph(
        load_bundled("delm"),
        llm=ModelRouter(model),
        config=TMASConfig(max_iterations=1),
        store=store,
    )
    result = graph.invoke(
        {"problem": "What is 9 + 9?", **state}, {"configurable": {"thread_id": "r"}}
    )
    return result, store, model


def test_two_workers_never_hold_the_same_claim() -> None:
    queue = TaskQueue(InMemoryStore(), ("run",))
    for i in range(40):
        queue.add(f"task {i}", added_by="seed")
    holders: dict[str, str] = {}
    overlaps: list[str] = []
    guard = threading.Lock()

    def work(worker: str) -> None:
        while (task := queue.claim(worker, ttl_s=60)) is not None:
            with guard:
                if task["id"] in holders:
                    overlaps.append(task["id"])
                holders[task["id"]] = worker
            assert queue.complete(task["id"], worker)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert overlaps == []
    assert len(holders) == 40
    assert all(t["status"] == "done" and t["claims"] == 1 for t in queue.all())


def test_an_expired_claim_is_picked_up_by_another_worker() -> None:
    now = [1000.0]
    queue = TaskQueue(InMemoryStore(), ("run",), clock=lambda: now[0])
    queue.add("slow task", added_by="seed")
    first = queue.claim("w1", ttl_s=10)
    assert first is not None and queue.claim("w2", ttl_s=10) is None
    now[0] += 11
    second = queue.claim("w2", ttl_s=10)
    assert second is not None and second["id"] == first["id"] and second["claimed_by"] == "w2"
    assert queue.complete(first["id"], "w1") is False  # w1 lost its claim
    assert queue.complete(first["id"], "w2") is True
    assert queue.unfinished() == 0


def test_every_task_of_a_run_is_claimed_once_and_done() -> None:
    result, store, _ = run_delm(ScriptedReplies(answers=("18",)))
    tasks = [item.value for item in store.search(("delm", "r", "tasks"))]
    assert len(tasks) == 2  # the planner's two sub-questions
    assert all(t["status"] == "done" and t["claims"] == 1 for t in tasks)
    assert result["final_answer"] == "18"
    assert result["history"][0]["pass_at_1"] is None


def test_a_run_makes_at_most_the_calls_its_progress_total_promises() -> None:
    for replies in (ScriptedReplies(answers=("18",)), MixedNotes()):
        result, _, model = run_delm(replies)
        bound = estimate_run_calls(load_bundled("delm"), TMASConfig(max_iterations=1))
        made = sum(u["calls"] for u in result["usage"].values())
        assert made == len(prompts_of(model)) and 0 < made <= bound.total and not bound.exact


@dataclass(frozen=True)
class MixedNotes(ScriptedReplies):
    """Workers propose a good note, one without evidence, a placeholder and one the judge
    rejects; the planner asks for four sub-questions."""

    def reply(
        self, role: Role | None, system: str, user: str, salt: str = "", prompt: str | None = None
    ) -> str:
        if prompt == "delm/planner_user":
            return "- good\n- no evidence\n- placeholder\n- judged wrong"
        if prompt == "delm/worker_user":
            task = user.split("Your task: ")[1].splitlines()[0]
            return {
                "good": "Note: nine plus nine is 18\nEvidence: 9 + 9 = 18",
                "no evidence": "Note: the sum is even",
                "placeholder": "Note: the total is TODO\nEvidence: TBD",
                "judged wrong": "Note: nine plus nine is 19\nEvidence: counted twice",
            }[task]
        if role == "verifier" and "19" in user:
            return "This is wrong.\nScore: 1/10\nVerdict: incorrect"
        return super().reply(role, system, user, salt, prompt)


def test_rejected_notes_never_reach_the_shared_context() -> None:
    _, store, model = run_delm(MixedNotes(answers=("18",)))
    notes = [item.value["text"] for item in store.search(("delm", "r", "notes"))]
    assert notes == ["nine plus nine is 18"]
    rejected = ("the sum is even", "the total is TODO", "nine plus nine is 19")
    shown = [p.split("Verified notes so far:")[1] for p in prompts_of(model) if "so far:" in p]
    shown += [p.split("Verified notes:")[1] for p in prompts_of(model) if "Verified notes:\n" in p]
    assert shown
    assert not any(text in context for text in rejected for context in shown)
    judged = [p for p in prompts_of(model) if "Proposed note:" in p]
    assert len(judged) == 2  # only notes that passed the deterministic checks reach the judge


def test_documents_are_split_across_workers() -> None:
    documents = ["Alice has 4 apples.", "Bob has 5 apples.", "Carol has 9 apples."]
    _, store, model = run_delm(ScriptedReplies(answers=("18",)), documents=documents)
    tasks = [item.value for item in store.search(("delm", "r", "tasks"))]
    assert [t["payload"]["document"] for t in sorted(tasks, key=lambda t: t["order"])] == documents
    worker_prompts = [p for p in prompts_of(model) if "Document:" in p]
    assert len(worker_prompts) == 3
    for document in documents:
        assert sum(document in p for p in worker_prompts) == 1
    assert not any("Split the problem" in p for p in prompts_of(model))  # no planner call


@dataclass(frozen=True)
class AddsSubtask(ScriptedReplies):
    """The first worker reply asks for a follow-up sub-question."""

    def reply(
        self, role: Role | None, system: str, user: str, salt: str = "", prompt: str | None = None
    ) -> str:
        if prompt == "delm/planner_user":
            return "- first"
        if prompt == "delm/worker_user":
            if "Your task: first" in user:
                return "Note: a is 9\nEvidence: given\nSubtask: second"
            return "Note: b is 9\nEvidence: given"
        return super().reply(role, system, user, salt, prompt)


def test_a_worker_may_add_subtasks() -> None:
    _, store, _ = run_delm(AddsSubtask(answers=("18",)))
    tasks = sorted(
        (item.value for item in store.search(("delm", "r", "tasks"))), key=lambda t: t["order"]
    )
    assert [t["text"] for t in tasks] == ["first", "second"]
    assert tasks[1]["added_by"].startswith("w") and tasks[1]["status"] == "done"
    board = NoteBoard(store, ("delm", "r"))
    assert [n["text"] for n in board.notes()] == ["a is 9", "b is 9"]


def test_deterministic_checks_name_each_problem() -> None:
    problems = deterministic_problems("x" * 50, "", ["x" * 50], max_chars=20, dedup_threshold=0.8)
    assert problems == [
        "longer than 20 characters",
        "no evidence",
        "duplicate of a note already on the board",
    ]
