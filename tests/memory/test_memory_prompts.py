"""Which prompt shows which remembered item: lessons of a lifelong memory (strategies that
worked, pitfalls met on similar problems) in first-iteration and exploit prompts, with their
source; the explore prompt's "already used" list holds only this problem's own strategies."""

from __future__ import annotations

from pathlib import Path

from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.manager import RunManager
from tmas.lifecycle.memory_runs import as_bank_item, seeded_banks
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.memory.lifelong import LifelongMemory
from tmas.nodes.agents.solver import solver_fields, solver_tasks, solver_template
from tmas.nodes.prompts import PromptSet
from tmas.nodes.tasks import TaskRequest
from tmas.storage import open_storage
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies

PROBLEM = "Ana has 12 stickers and gives half of them to Omar. How many stickers are left?"
SOURCE = "Sara has 10 apples and gives half of them away. How many apples are left?"
STRATEGY = "Halve the amount first, then answer with the half that is left"
PITFALL = "Pitfall: half as many means divide by two, not subtract two"
OWN_STRATEGY = "Subtract the stickers given away from the total"


def remembered(kind: str, kind_type: str, text: str) -> dict:
    return {"id": f"r0.{kind[0]}1.0.{abs(hash(text)) % 1000}", "kind": kind,
            "type": kind_type, "text": text, "score": 0.92, "hits": 2,
            "provenance": {"problem": SOURCE, "run_id": "r0"}}  # fmt: skip


def prompt_of(task: dict) -> str:
    return PromptSet().render(solver_template(task), **solver_fields(task))


def state_with_memory(plans: list[dict]) -> dict:
    bank = [as_bank_item(remembered("guideline", "strategy", STRATEGY)),
            as_bank_item(remembered("experience", "pitfall", PITFALL))]  # fmt: skip
    own = {"id": "g1.0.0", "text": OWN_STRATEGY, "iteration": 1, "source_index": 0, "hits": 1}
    legacy = {
        **as_bank_item(remembered("guideline", "strategy", "Count them one by one")),
        "text": "Count them one by one",
    }  # a run saved when memory seeded guidelines
    parent = {"index": 0, "text": "Ana gives 2 away: \\boxed{10}", "answer": "10",
              "summary": "The checks say half of 12 is 6, not 2."}  # fmt: skip
    return {"problem": PROBLEM, "plans": plans, "experience_bank": bank,
            "guideline_bank": [own, legacy], "previous": [parent]}  # fmt: skip


def test_remembered_lessons_go_to_first_and_exploit_prompts_never_to_explore() -> None:
    config = TMASConfig(n_candidates=3)
    plans = [{"index": 0, "mode": "initial"},
             {"index": 1, "mode": "exploit", "parent_index": 0},
             {"index": 2, "mode": "explore"}]  # fmt: skip
    initial, exploit, explore = (
        prompt_of(t) for t in solver_tasks(TaskRequest(state_with_memory(plans), config))
    )
    lesson = f'A strategy that worked on a similar problem ("{SOURCE[:67]}...", verified 0.92)'
    pitfall = "A pitfall met on a similar problem"
    for prompt in (initial, exploit):  # offered as lessons, with where they come from
        assert lesson in prompt and STRATEGY in prompt
        assert pitfall in prompt and "divide by two" in prompt
    assert "Lessons kept from earlier problems" in initial
    assert "Reliable notes from earlier attempts" in exploit
    # the explore prompt's list of strategies to avoid: this problem's own only
    assert "do NOT use them" in explore and OWN_STRATEGY in explore
    assert STRATEGY not in explore and "divide by two" not in explore
    assert "Count them one by one" not in explore  # not even one an older run saved there


def test_memory_seeds_strategies_as_lessons_not_as_guidelines(tmp_path: Path) -> None:
    storage = open_storage(tmp_path / "runs.sqlite", for_writing=True)
    try:
        memory = LifelongMemory(storage.store(), "halves")  # type: ignore[attr-defined]
        memory.admit("r0", SOURCE, [
            {"kind": "guideline", "text": STRATEGY, "iteration": 1, "source_index": 0,
             "score": 0.9},
            {"kind": "experience", "type": "pitfall", "text": PITFALL, "iteration": 1,
             "source_index": 1, "score": 0.9}])  # fmt: skip
        banks = seeded_banks(storage, TMASConfig(memory="halves"), PROBLEM)
    finally:
        storage.close()  # type: ignore[attr-defined]
    assert "guideline_bank" not in banks  # it starts empty: it is what explore avoids
    kinds = {item["kind"]: item for item in banks["experience_bank"]}
    assert set(kinds) == {"strategy", "pitfall"}
    assert all(i["origin"] == "memory" and i["provenance"]["run_id"] == "r0"
               for i in kinds.values())  # fmt: skip
    assert kinds["strategy"]["text"].startswith("A strategy that worked on a similar problem")


def test_a_second_run_shows_remembered_strategies_as_lessons_only(tmp_path: Path) -> None:
    config = TMASConfig(n_candidates=2, n_verifications=1, max_iterations=2, epsilon=1.0,
                        memory="arith")  # fmt: skip
    problem = "Check the arithmetic and the units: what is 9 + 9?"
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
    storage = open_storage(tmp_path / "runs.sqlite", for_writing=True)
    factory = lambda plan: ModelRouter(model)  # noqa: E731
    manager = RunManager(storage, router_factory=factory)
    try:
        manager.start(
            "first",
            problem=problem,
            gold_answer="18",
            plan=plan_run(load_bundled("tmas"), config, BackendSpec()),
            show_progress=False,
        )
        kept = LifelongMemory(storage.store(), "arith").items()  # type: ignore[attr-defined]
        strategies = [i["text"] for i in kept if i["kind"] == "guideline"]
        assert strategies  # the first run left a strategy worth remembering
        start = len(model.log)
        second = manager.start(
            "second",
            problem=problem,
            gold_answer="18",
            plan=plan_run(load_bundled("tmas"), config, BackendSpec()),
            show_progress=False,
        )
    finally:
        storage.close()  # type: ignore[attr-defined]
    solver_calls = [c for c in model.log[start:] if c.role == "solver"]
    first = [c for c in solver_calls if c.prompt == "solver/initial_memory"]
    explore = [c for c in solver_calls if c.prompt == "solver/explore"]
    assert len(first) == 2 and explore  # epsilon 1: every second-iteration solver explores
    assert all(any(s in c.user for s in strategies) for c in first)
    assert all("worked on a similar problem" in c.user for c in first)
    # what explore avoids is what this run's own attempts used: no remembered lesson
    assert not any("on a similar problem" in c.user for c in explore)
    assert not [g for g in second.state["guideline_bank"] if g.get("origin") == "memory"]


def test_editing_a_paused_runs_banks_keeps_its_remembered_lessons() -> None:
    from tmas.lifecycle.review import banks_as_json, banks_from_json

    lesson = as_bank_item(remembered("guideline", "strategy", STRATEGY))
    edited = banks_from_json(banks_as_json({"experience_bank": [lesson]}), iteration=2)
    [kept] = edited["experience_bank"]
    assert kept["kind"] == "strategy" and kept["origin"] == "memory"
    assert kept["provenance"]["problem"] == SOURCE and kept["text"] == lesson["text"]


def test_a_role_with_its_own_adapter_says_so_in_the_run_header() -> None:
    from tmas.graphs.bundled import load_bundled
    from tmas.graphs.run_plan import plan_run

    config = {"roles": {"judger": {"adapter": "/adapters/judger"}}}
    plan = plan_run(load_bundled("text_mas"), config, BackendSpec(kind="hf", model="smollm2"))
    assert plan.models["judger"] == "hf:smollm2 + /adapters/judger"
    assert plan.models["solver"] == "hf:smollm2"
    assert plan.bindings["judger"].adapter == "/adapters/judger"
