"""The lifelong study's purer upper bound (``benchmarks/studies/lifelong.yaml``,
``lessons_only``): a memory that keeps nothing new holds only the four hand-written lessons,
and every trap problem retrieves its own lesson, which the ``lessons`` arm (learning beside
them) showed on 15 of 40."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from langgraph.store.memory import InMemoryStore

from tmas.config import TMASConfig
from tmas.lifecycle.memory_runs import memory_in
from tmas.memory.lifelong import LifelongMemory

STUDIES = Path(__file__).resolve().parents[2] / "benchmarks" / "studies"


def rows(name: str) -> list[dict]:
    text = (STUDIES / "data" / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def lessons_only_memory() -> tuple[LifelongMemory, TMASConfig]:
    """The arm's memory as its settings build it, with the lessons imported."""
    study = yaml.safe_load((STUDIES / "lifelong.yaml").read_text(encoding="utf-8"))
    config = TMASConfig(**study["conditions"]["lessons_only"]["settings"])
    memory = memory_in(InMemoryStore(), config)
    assert memory.import_items(rows("hard_trap_lessons.jsonl")) == 4
    return memory, config


def test_every_trap_problem_retrieves_its_own_lesson() -> None:
    memory, config = lessons_only_memory()
    problems = rows("hard_traps.jsonl")
    assert len(problems) == 40
    for problem in problems:
        shown = [item["id"] for item in memory.retrieve(problem["problem"], config.memory_items)]
        assert f"lesson-{problem['kind']}" in shown, (problem["problem"], shown)
        assert len(shown) <= config.experiences_per_prompt  # a prompt has room for them all


def test_the_memory_learns_nothing_beside_the_lessons() -> None:
    memory, _ = lessons_only_memory()
    proposal = {"kind": "experience", "type": "pitfall", "text": "Check the units.",
                "iteration": 1, "source_index": 0, "score": 1.0}  # fmt: skip
    strategy = {**proposal, "type": "strategy", "text": "Work backwards."}
    assert memory.admit("run-1", "Some problem.", [proposal, strategy]) == 0
    assert len(memory.items()) == 4
