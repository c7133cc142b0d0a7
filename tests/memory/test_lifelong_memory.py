"""Lifelong memory: only well-verified items enter, retrieval finds the relevant ones, caps
hold, a run admitted again adds nothing, runs on SQLite and PostgreSQL seed later runs'
banks and prompts, and concurrent runs writing one memory lose nothing."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from langgraph.store.memory import InMemoryStore

from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run, saved_plan
from tmas.lifecycle.manager import RunManager
from tmas.lifecycle.memory_runs import remember
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.memory.lifelong import LifelongMemory, namespaces
from tmas.storage import open_storage
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies
from tmas.views.trace.collect import collect_trace
from tmas.views.trace.html import render_run

# shares words with the scripted model's experience items ("the arithmetic", "units")
PROBLEM = "Check the arithmetic and the units: what is 9 + 9?"
CONFIG = TMASConfig(n_candidates=2, n_verifications=1, max_iterations=2, memory="arith")


def item(text: str, score: float | None, kind: str = "experience", source: int = 0) -> dict:
    return {"kind": kind, "type": "pitfall", "text": text, "iteration": 1,
            "source_index": source, "score": score}  # fmt: skip


def test_only_items_of_well_verified_rollouts_enter() -> None:
    memory = LifelongMemory(InMemoryStore(), "m", min_score=0.75)
    added = memory.admit("r1", "p", [
        item("Pitfall: a sign flips when both sides are negated", 0.9),
        item("Pitfall: the discount applies before tax", 0.5, source=1),
        item("Pitfall: never checked", None, source=2),
        item("Try the complement", 0.75, kind="guideline"),
    ])  # fmt: skip
    assert added == 2
    assert sorted(i["text"] for i in memory.items()) == [
        "Pitfall: a sign flips when both sides are negated", "Try the complement",
    ]  # fmt: skip
    kept = memory.items()[0]
    assert kept["provenance"] == {"run_id": "r1", "problem": "p", "iteration": 1,
                                  "candidate": 0, "verification_score": 0.9}  # fmt: skip


def test_retrieval_ranks_by_relevance_and_near_duplicates_reinforce() -> None:
    memory = LifelongMemory(InMemoryStore(), "m")
    memory.admit("r1", "p", [
        item("Pitfall: percentages of a discount compound, they do not add", 0.9),
        item("Pitfall: a train's speed is distance over time", 0.9, source=1),
        item("Pitfall: triangle angles sum to 180 degrees", 0.9, source=2),
    ])  # fmt: skip
    memory.admit("r2", "p", [item("Pitfall: percentages of a discount compound, not add", 0.9)])
    found = memory.retrieve("A shop gives a 20% discount, then another discount of 10%", 2)
    assert found[0]["text"].startswith("Pitfall: percentages of a discount")
    assert found[0]["hits"] == 2 and found[0]["runs"] == ["r1", "r2"]
    assert len(memory.items()) == 3
    assert memory.retrieve("What is the capital of France?", 3) == []  # nothing shared


def test_caps_keep_the_most_reinforced_and_used_items() -> None:
    clock = iter(range(100))
    memory = LifelongMemory(InMemoryStore(), "m", cap=3, clock=lambda: next(clock))
    texts = (
        "Pitfall: forgetting to carry the one",
        "Pitfall: mixing up hours and minutes",
        "Pitfall: counting the fence posts, not the gaps",
    )
    memory.admit("r1", "p", [item(text, 0.9, source=i) for i, text in enumerate(texts)])
    first = memory.items()[0]["id"]
    memory.mark_used("r2", [first])
    memory.admit("r3", "p", [item("Pitfall: something else entirely new", 0.9)])
    kept = memory.items()
    assert len(kept) == 3 and first in {i["id"] for i in kept}
    assert texts[1] not in {i["text"] for i in kept}  # least worth, oldest


def test_admitting_a_run_again_changes_nothing() -> None:
    memory = LifelongMemory(InMemoryStore(), "m")
    proposals = [item("Pitfall: units dropped", 0.9), item("Work backwards", 0.9, "guideline")]
    assert memory.admit("r1", "p", proposals) == 2
    before = memory.items()
    memory.mark_used("r2", [before[0]["id"]])
    memory.mark_used("r2", [before[0]["id"]])
    assert memory.admit("r1", "p", proposals) == 0
    after = memory.items()
    assert [(i["id"], i["hits"]) for i in after] == [(i["id"], i["hits"]) for i in before]
    assert after[0]["uses"] == 1


def manager_on(db: str | Path, model: ScriptedChatModel) -> tuple[RunManager, object]:
    storage = open_storage(db, for_writing=True)
    factory = lambda plan: ModelRouter(model)  # noqa: E731
    return RunManager(storage, router_factory=factory), storage


def run_twice_with_memory(db: str | Path) -> None:
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
    manager, storage = manager_on(db, model)
    try:
        first = manager.start(
            "first",
            problem=PROBLEM,
            gold_answer="18",
            plan=plan_run(load_bundled("tmas"), CONFIG, BackendSpec()),
            show_progress=False,
        )
        memory = LifelongMemory(storage.store(), "arith")  # type: ignore[attr-defined]
        kept = memory.items()
        assert kept and all(i["provenance"]["run_id"] == "first" for i in kept)
        assert all(i["score"] >= CONFIG.memory_min_score for i in kept)
        # finishing again (a resume of a finished run, a repeated write) adds nothing
        assert remember(storage, "first", PROBLEM, CONFIG, first.state) == 0  # type: ignore[arg-type]
        assert len(memory.items()) == len(kept)

        calls_before = len(model.log)
        second = manager.start(
            "second",
            problem=PROBLEM,
            gold_answer="18",
            plan=plan_run(load_bundled("tmas"), CONFIG, BackendSpec()),
            show_progress=False,
        )
        seeded = [e for e in second.state["experience_bank"] if e.get("origin") == "memory"]
        assert seeded  # the second run's banks started with the first run's items
        first_solvers = [c for c in model.log[calls_before:] if c.role == "solver"][:2]
        assert all(c.prompt == "solver/initial_memory" for c in first_solvers)
        assert all("Lessons kept from earlier problems" in c.user for c in first_solvers)
        assert any(e["text"] in first_solvers[0].user for e in seeded)
        used = [i for i in memory.items() if "second" in i["used_by"]]
        assert {f"m:{i['id']}" for i in used} >= {e["id"] for e in seeded}
        assert namespaces(storage.store()) == ["arith"]  # type: ignore[attr-defined]
        trace = collect_trace(storage, "second")  # type: ignore[arg-type]
        assert {i["id"] for i in trace.memory_items} >= {e["id"] for e in seeded}
        page = render_run(trace)
        assert "from memory" in page and "started with" in page
        given = trace.iterations[0].candidates[0].experiences
        assert given and all(text is not None for _, text in given)  # memory items resolved
    finally:
        storage.close()  # type: ignore[attr-defined]


def test_a_run_with_memory_seeds_the_next_on_sqlite(tmp_path: Path) -> None:
    run_twice_with_memory(tmp_path / "runs.sqlite")


@pytest.mark.slow
def test_a_run_with_memory_seeds_the_next_on_postgres(postgres_url: str) -> None:
    run_twice_with_memory(postgres_url)


def test_concurrent_runs_writing_one_memory_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    open_storage(db).close()
    errors: list[BaseException] = []

    def write(run: int) -> None:
        storage = open_storage(db, for_writing=True)
        try:
            memory = LifelongMemory(storage.store(), "shared")
            memory.admit(f"r{run}", "p", [
                item(f"Pitfall {run}-{k}: {'abcdefghij'[run]} {'klmnopqrst'[k]} case", 0.9,
                     source=k)
                for k in range(5)
            ])  # fmt: skip
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            storage.close()

    threads = [threading.Thread(target=write, args=(run,)) for run in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    storage = open_storage(db)
    try:
        assert len(LifelongMemory(storage.store(), "shared").items()) == 30
    finally:
        storage.close()


def test_the_memory_commands_list_show_prune_export_and_import(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tmas.cli import app

    db = tmp_path / "runs.sqlite"
    storage = open_storage(db, for_writing=True)
    try:
        LifelongMemory(storage.store(), "arith").admit("r1", "p", [
            item("Pitfall: forgetting to carry the one", 0.9),
            item("Pitfall: mixing up hours and minutes", 0.9, source=1),
            item("Work backwards from the total", 0.8, "guideline"),
        ])  # fmt: skip
    finally:
        storage.close()

    def tmas(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(app, ["memory", *args, "--db", str(db)], env={"COLUMNS": "300"})
        return result.exit_code, " ".join(result.output.split())

    code, listed = tmas("ls")
    assert code == 0 and "arith" in listed and "2" in listed
    code, shown = tmas("show", "arith")
    assert code == 0 and "carry the one" in shown and "r1 it 1 c 0" in shown
    exported = tmp_path / "arith.jsonl"
    assert tmas("export", "arith", "--out", str(exported))[0] == 0
    assert len(exported.read_text().splitlines()) == 3
    code, pruned = tmas("prune", "arith", "--keep", "1")
    assert code == 0 and "2 items deleted, 1 kept" in pruned
    code, imported = tmas("import", "copy", str(exported))
    assert code == 0 and "3 items imported into copy" in imported
    # bad input: clear errors, exit 2, nothing changed
    assert tmas("show", "nope")[0] == 2 and "no memory named 'nope'" in tmas("show", "nope")[1]
    assert tmas("prune", "nope", "--keep", "1")[0] == 2
    assert tmas("prune", "arith")[0] == 2  # nothing said to prune
    broken = tmp_path / "broken.jsonl"
    broken.write_text(exported.read_text() + '{"text": "no id"}\n')
    code, message = tmas("import", "copy", str(broken))
    assert code == 2 and "not a memory item" in message
    storage = open_storage(db)
    try:
        assert len(LifelongMemory(storage.store(), "copy").items()) == 3  # not half-imported
    finally:
        storage.close()


def test_an_evaluation_in_order_carries_memory_from_problem_to_problem(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from tmas.cli import app
    from tmas.eval.job import eval_run_id
    from tmas.lifecycle.history import saved_state
    from tmas.testing.fake_openai_server import FakeOpenAIServer

    rows = [{"id": f"p{i}", "problem": f"Keep the units of step {i}: what is {i} + {i}?",
             "answer": str(2 * i)} for i in range(1, 4)]  # fmt: skip
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    db, out = tmp_path / "runs.sqlite", tmp_path / "out"
    with FakeOpenAIServer() as server:
        result = CliRunner().invoke(app, [
            "eval", "--out", str(out), "--data", str(data), "--concurrency", "1",
            "--base-url", server.base_url, "--model", "scripted", "-n", "2", "-m", "1",
            "-t", "1", "--memory", "arith", "--db", str(db),
        ])  # fmt: skip
    assert result.exit_code == 0, result.output
    storage = open_storage(db)
    try:
        first, *later = (saved_state(storage, eval_run_id(out, row["id"])) for row in rows)
        memory = LifelongMemory(storage.store(), "arith").items()
    finally:
        storage.close()
    assert not [e for e in first["experience_bank"] if e.get("origin") == "memory"]
    for state in later:  # every later problem started with what the earlier ones kept
        assert [e for e in state["experience_bank"] if e.get("origin") == "memory"]
    assert memory and {i["provenance"]["run_id"] for i in memory} <= {
        eval_run_id(out, row["id"]) for row in rows
    }


def test_served_requests_share_the_servers_memory(tmp_path: Path) -> None:
    from tmas.lifecycle.history import saved_state
    from tmas.serve import ChatService

    db = tmp_path / "runs.sqlite"
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
    service = ChatService.with_chat_model(model, db=db, memory="arith")
    body = {"model": "tmas", "messages": [{"role": "user", "content": PROBLEM}],
            "n_candidates": 2, "n_verifications": 1, "max_iterations": 1}  # fmt: skip
    try:
        first = service.complete_sync(body)["tmas"]["run_ids"][0]
        second = service.complete_sync(body)["tmas"]["run_ids"][0]
    finally:
        service.close()
    storage = open_storage(db)
    try:
        assert saved_plan(storage.registry.get(second)).config.memory == "arith"
        bank = saved_state(storage, second)["experience_bank"]
        assert any(e.get("origin") == "memory" and first in e["id"] for e in bank)
    finally:
        storage.close()


def test_a_damaged_database_is_a_clear_error_and_stays_as_it_was(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tmas.cli import app

    damaged = tmp_path / "runs.sqlite"
    damaged.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 64)
    before = damaged.read_bytes()
    for args in (["ls"], ["show", "arith"], ["prune", "arith", "--keep", "1"]):
        result = CliRunner().invoke(app, ["memory", *args, "--db", str(damaged)])
        assert result.exit_code in (1, 2), result.output
        assert "damaged or not a run database" in " ".join(result.output.split())
        assert "Traceback" not in result.output
    assert damaged.read_bytes() == before


def test_resuming_a_run_stopped_before_its_items_were_kept_keeps_them_once(tmp_path: Path) -> None:
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
    manager, storage = manager_on(tmp_path / "runs.sqlite", model)
    try:
        manager.start(
            "r",
            problem=PROBLEM,
            gold_answer="18",
            plan=plan_run(load_bundled("tmas"), CONFIG, BackendSpec()),
            show_progress=False,
        )
        memory = LifelongMemory(storage.store(), "arith")  # type: ignore[attr-defined]
        kept = memory.items()
        for item in kept:  # as if the process died after the run's end, before its memory
            storage.store().delete(memory.namespace, item["id"])  # type: ignore[attr-defined]
        calls = len(model.log)
        manager.resume("r", show_progress=False)
        manager.resume("r", show_progress=False)
        assert len(model.log) == calls  # a finished run makes no model call
        assert [(i["id"], i["hits"]) for i in memory.items()] == [
            (i["id"], i["hits"]) for i in kept
        ]
    finally:
        storage.close()  # type: ignore[attr-defined]
