"""The lifelong-memory benchmark's helpers (``benchmarks/lifelong.py``,
``benchmarks/trap_problems.py``): the lessons a problem was shown are those its prompts showed,
at most ``experiences_per_prompt`` a prompt, not every item the memory seeded its banks with;
and every "across noon" trap problem starts in the morning, ends in the afternoon and has the
elapsed minutes as its answer."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.manager import RunManager
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.memory.lifelong import LifelongMemory
from tmas.storage import open_storage
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
PROBLEM = "Check the arithmetic and the units: what is 9 + 9?"
LESSONS = [  # each shares words with the problem, so the memory retrieves all four
    "Pitfall: check the arithmetic of each sum twice",
    "Pitfall: the units of the answer must match the question",
    "Pitfall: 9 + 9 is a sum of two equal numbers, double one",
    "Pitfall: check what the question asks before the arithmetic",
]


def benchmark(name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A module of benchmarks/ (which import each other by their plain names)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module(name)


def test_lessons_shown_counts_what_the_prompts_showed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lifelong = benchmark("lifelong", monkeypatch)
    db = tmp_path / "runs.sqlite"
    storage = open_storage(db, for_writing=True)
    try:
        memory = LifelongMemory(storage.store(), "arith")  # type: ignore[attr-defined]
        memory.admit("r0", "What is 8 + 8? Mind the units.", [
            {"kind": "experience", "type": "pitfall", "text": text, "iteration": 1,
             "source_index": index, "score": 0.9}
            for index, text in enumerate(LESSONS)
        ])  # fmt: skip
        config = TMASConfig(n_candidates=2, n_verifications=1, max_iterations=1,
                            memory="arith", experiences_per_prompt=1)  # fmt: skip
        model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
        manager = RunManager(storage, router_factory=lambda plan: ModelRouter(model))
        plan = plan_run(load_bundled("tmas"), config, BackendSpec())
        outcome = manager.start("run", problem=PROBLEM, gold_answer="18", plan=plan,
                                show_progress=False)  # fmt: skip
    finally:
        storage.close()  # type: ignore[attr-defined]
    seeded = [e["id"] for e in outcome.state["experience_bank"] if e.get("origin") == "memory"]
    assert len(seeded) == len(LESSONS)  # the memory seeded the bank with all four
    given = [c["experience_ids"] for c in outcome.state["candidates"]]
    assert len(given) == 2 and all(len(ids) == 1 for ids in given)  # one lesson a prompt
    assert lifelong.lessons_shown(db, [{"run_id": "run"}]) == [len({*given[0], *given[1]})]
    assert lifelong.lessons_shown(db, [{"run_id": "run"}]) == [1]  # both showed the closest


TIME = re.compile(r"(\d{1,2}):(\d\d) (AM|PM)")


def minutes(hour: str, minute: str, half: str) -> int:
    """Minutes after midnight of a 12-hour clock time."""
    return int(hour) % 12 * 60 + int(minute) + (12 * 60 if half == "PM" else 0)


def test_every_elapsed_problem_crosses_noon_with_the_right_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    traps = benchmark("trap_problems", monkeypatch)
    rows = [
        row
        for seed in range(50)
        for row in traps.generate(40, seed=seed, traps=traps.HARD_TRAPS)
        if row["trap"] == "elapsed"
    ]
    assert len(rows) == 50 * 10
    for row in rows:
        (start, end) = TIME.findall(row["problem"])
        begun, ended = minutes(*start), minutes(*end)
        assert start[2] == "AM" and end[2] == "PM", row["problem"]
        assert begun < 12 * 60 < ended, row["problem"]  # across noon, not up to it
        assert int(row["answer"]) == ended - begun, row["problem"]
        assert row["solution"].endswith(f"\\boxed{{{row['answer']}}}.")
