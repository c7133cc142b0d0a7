"""The real path of proof mode and lifelong memory: SmolLM2 writes, checks and grades proofs
of a bundled proof problem, and a second problem's run starts from what the first one kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from tmas.config import RoleModel, TMASConfig
from tmas.eval.data import load_problems
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.manager import RunManager
from tmas.lifecycle.memory_runs import lesson_text, proposals_of
from tmas.llm.backend import BackendSpec
from tmas.memory.lifelong import LifelongMemory
from tmas.storage import open_storage

TINY = dict(
    n_candidates=2, n_verifications=1, max_iterations=1, solver_max_tokens=48,
    verifier_max_tokens=48, summary_max_tokens=24, experience_max_tokens=32,
    guideline_max_tokens=16, max_retries=0,
)  # fmt: skip
SMOLLM2 = BackendSpec(kind="llamacpp", model="smollm2", n_ctx=2048)

pytestmark = pytest.mark.slow


def test_a_proof_run_on_smollm2_is_selected_by_its_checks_and_graded(tmp_path: Path) -> None:
    problem = load_problems("proofs", limit=1, proof=True)[0]
    storage = open_storage(tmp_path / "runs.sqlite", for_writing=True)
    try:
        state = (
            RunManager(storage)
            .start(
                "proof",
                problem=problem.problem,
                gold_answer=problem.solution,
                plan=plan_run(
                    load_bundled("tmas"),
                    TMASConfig(**TINY, proof=True, roles={"proof_judge": RoleModel(max_tokens=48)}),
                    SMOLLM2,
                ),
                show_progress=False,
            )
            .state
        )
    finally:
        storage.close()
    chosen = state["extras"]["proof_choice"]
    assert state["final_answer"] == chosen["text"] and chosen["text"].strip()
    grade = state["extras"]["proof_grade"]
    assert [g["index"] for g in grade["candidates"]] == [0, 1]
    assert all(g["verdict"] in ("correct", "incorrect", "unknown") for g in grade["candidates"])
    assert state["usage"]["proof_judge"]["calls"] == 2


def test_memory_seeds_a_smollm2_run_and_keeps_its_checked_items(tmp_path: Path) -> None:
    config = TMASConfig(**TINY, memory="real", memory_min_score=0.0)
    problem = "Tom has 3 apples and buys 4 more apples. How many apples does Tom have?"
    lesson = "Pitfall: add the apples bought to the apples Tom already has"
    storage = open_storage(tmp_path / "runs.sqlite", for_writing=True)
    try:
        memory = LifelongMemory(storage.store(), "real")
        memory.admit("earlier", "Ann has 2 apples ...", [
            {"kind": "experience", "type": "pitfall", "text": lesson, "iteration": 1,
             "source_index": 0, "score": 0.9},
        ])  # fmt: skip
        state = (
            RunManager(storage)
            .start(
                "b",
                problem=problem,
                gold_answer="7",
                plan=plan_run(load_bundled("tmas"), config, SMOLLM2),
                show_progress=False,
            )
            .state
        )
        items = memory.items()
        [memory_item] = [i for i in items if i["provenance"]["run_id"] == "earlier"]
    finally:
        storage.close()
    seeded = [e for e in state["experience_bank"] if e.get("origin") == "memory"]
    assert len(seeded) == 1 and seeded[0]["kind"] == "pitfall"  # started from the memory
    assert seeded[0]["text"] == lesson_text(memory_item)  # offered as a lesson with its source
    assert seeded[0]["text"].startswith('A pitfall met on a similar problem ("Ann has 2 apples')
    assert state["candidates"][0]["experience_ids"] == [seeded[0]["id"]]  # shown to solvers
    earlier = next(i for i in items if i["provenance"]["run_id"] == "earlier")
    assert earlier["uses"] == 1 and earlier["used_by"] == ["b"]
    scored = [p for p in proposals_of(state) if p["score"] is not None]
    from_b = [i for i in items if "b" in i["runs"]]
    assert bool(from_b) == bool(scored)  # exactly the checked rollouts' items were kept
    assert all(i["score"] is not None for i in from_b if i["provenance"]["run_id"] == "b")
