"""Study conditions beyond a topology and its settings, against the scripted server: seeds of
their own, lifelong memory per arm (and seeded with lessons), and the training conditions'
checks that need no model."""

from __future__ import annotations

import importlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.eval.test_study import run_study, study_document, write_study
from tmas.eval.data import Problem
from tmas.eval.dedupe import deduplicated
from tmas.eval.study import Study
from tmas.eval.study_file import StudyError
from tmas.eval.study_loading import load_study, parse_study
from tmas.lifecycle.history import latest_run_states
from tmas.lifecycle.run_database import open_runs
from tmas.memory.banks import remembered_items
from tmas.memory.lifelong import LifelongMemory
from tmas.testing.fake_openai_server import FakeOpenAIServer

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer() as running:
        yield running


def test_a_condition_with_fewer_seeds_runs_only_those_and_pairs_on_them(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    document = study_document(seeds=[0, 1], self_consistency=False)
    document["problems"]["limit"] = 2
    document["conditions"]["rsa"]["seeds"] = [1]
    document["contrasts"] = [["rsa", "tmas"]]
    out = tmp_path / "out"
    result = run_study(tmp_path, write_study(tmp_path, document), out, server)
    assert result.exit_code == 0, result.output
    assert not (out / "conditions" / "rsa" / "seed-0").exists()
    assert (out / "conditions" / "rsa" / "seed-1" / "results.jsonl").is_file()
    report = json.loads((out / "report.json").read_text())
    rsa = report["conditions"]["rsa"]
    assert rsa["seeds"] == [1] and report["conditions"]["tmas"]["seeds"] == [0, 1]
    assert rsa["difference"]["pairs"] == 2  # 2 problems x the one shared seed, not 4
    (contrast,) = report["contrasts"]  # the other way round: tmas - rsa on seed 1
    assert (contrast["baseline"], contrast["treated"], contrast["seeds"]) == ("rsa", "tmas", [1])
    assert contrast["value"] == -rsa["difference"]["value"] and contrast["pairs"] == 2
    assert contrast["per_seed"] == [contrast["value"]]  # one shared seed: its value is the mean
    assert f"| tmas - rsa | {100 * contrast['value']:+.1f} " in (out / "report.md").read_text()
    assert f"| seed 1: {100 * contrast['value']:+.1f} |" in (out / "report.md").read_text()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tmas": {"seeds": [0]}}, "the reference runs them all"),
        ({"rsa": {"graph": "rsa", "seeds": [5]}}, "a non-empty subset of the study's [0]"),
        ({"rsa": {"graph": "rsa", "memory_import": "x.jsonl"}}, "needs a memory: setting"),
        (
            {"rsa": {"train": {"kind": "sft", "settings": {"data": "d", "seed": 1}}}},
            "seed: the study sets these",
        ),
        ({"rsa": {"graph": "rsa", "train": {"kind": "sft"}}}, "data: name the training rows"),
        (
            {"rsa": {"graph": "rsa", "train": {"kind": "sft", "settings": {"data": "d"},
                                               "warm_start": "tmas"}}},
            "warm_start 'tmas' is not another training condition",
        ),
    ],
)  # fmt: skip
def test_bad_conditions_are_refused_with_what_to_change(change: dict, message: str) -> None:
    document = study_document()
    document["conditions"].update(change)
    with pytest.raises(StudyError, match="not a study") as caught:
        parse_study(document)
    assert message in str(caught.value)


def test_warm_starts_in_a_circle_are_refused() -> None:
    train = {"kind": "grpo", "settings": {"data": "d"}}
    document = study_document()
    document["conditions"]["a"] = {"train": {**train, "warm_start": "b"}}
    document["conditions"]["b"] = {"train": {**train, "warm_start": "a"}}
    with pytest.raises(StudyError, match="a circle"):
        parse_study(document)


@pytest.mark.parametrize(
    ("contrasts", "message"),
    [
        ([["rsa", "vote"]], r"contrast \[rsa, vote\]: two different conditions of tmas, rsa"),
        ([["rsa", "rsa"]], "two different conditions"),
    ],
)
def test_contrasts_name_two_conditions(contrasts: list, message: str) -> None:
    with pytest.raises(StudyError, match=message):
        parse_study(study_document(contrasts=contrasts, self_consistency=False))


def test_contrasts_need_a_shared_seed() -> None:
    document = study_document(seeds=[0, 1], contrasts=[["rsa", "vote"]])
    document["conditions"]["rsa"]["seeds"] = [0]
    document["conditions"]["vote"] = {"graph": "majority_vote", "seeds": [1]}
    with pytest.raises(StudyError, match=r"\[rsa, vote\]: the two share no seed"):
        parse_study(document)


def test_a_training_condition_needs_the_training_study() -> None:
    document = study_document()
    document["conditions"]["rsa"]["train"] = {"kind": "sft", "settings": {"data": "d"}}
    with pytest.raises(StudyError, match="trains first: run the study with tmas study"):
        Study(parse_study(document), Path("out"))


def test_remembering_conditions_need_one_problem_at_a_time() -> None:
    document = study_document(concurrency=2)
    document["conditions"]["rsa"]["settings"]["memory"] = "m"
    with pytest.raises(StudyError, match="concurrency: 1"):
        parse_study(document)


def lesson(text: str) -> dict[str, Any]:
    return {"id": "lesson-1", "kind": "experience", "type": "pitfall", "text": text,
            "hits": 0, "uses": 0, "runs": [], "created_at": time.time()}  # fmt: skip


def test_each_remembering_arm_has_its_own_memory_and_lessons_seed_it(
    tmp_path: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    lessons = tmp_path / "lessons.jsonl"
    text = "Ducks lay eggs per day: subtract the eggs she eats and bakes before selling."
    lessons.write_text(json.dumps(lesson(text)) + "\n")
    settings = {"n_candidates": 1, "n_verifications": 1, "max_iterations": 1}
    document = study_document(self_consistency=False, reference="off", conditions={
        "off": {"settings": settings},
        "on": {"settings": {**settings, "memory": "traps"}},
        "lessons": {"settings": {**settings, "memory": "traps"}, "memory_import": str(lessons)},
    })  # fmt: skip
    document["problems"]["limit"] = 2
    out = tmp_path / "out"
    result = run_study(tmp_path, write_study(tmp_path, document), out, server)
    assert result.exit_code == 0, result.output
    storage = open_runs(out / "runs.sqlite")
    try:
        store = storage.store()
        seeded = {i["id"] for i in LifelongMemory(store, "traps-lessons-seed-0").items()}
        learnt = {i["id"] for i in LifelongMemory(store, "traps-on-seed-0").items()}
        assert "lesson-1" in seeded and "lesson-1" not in learnt
        rows = [json.loads(line) for line in
                (out / "conditions" / "lessons" / "seed-0" / "results.jsonl").open()]  # fmt: skip
        first = min(rows, key=lambda row: row["id"])
        shown, texts = set(), {}
        for state in latest_run_states(storage.checkpointer, first["run_id"]):
            texts.update({item["id"]: item["text"] for item in remembered_items(state)})
            for candidate in state.get("candidates") or []:
                shown.update(candidate.get("experience_ids") or [])
        shown_texts = [texts[i] for i in shown if i in texts]
        assert any("Ducks lay eggs" in text for text in shown_texts), (shown, texts)
    finally:
        storage.close()
    again = run_study(tmp_path, write_study(tmp_path, document), out, server)
    assert again.exit_code == 0, again.output  # a rerun does not import the lessons again
    storage = open_runs(out / "runs.sqlite")
    try:
        items = LifelongMemory(storage.store(), "traps-lessons-seed-0").items()
        assert [i["id"] for i in items].count("lesson-1") == 1
    finally:
        storage.close()
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # lifelong.py --study, at toy size
    lifelong = importlib.import_module("lifelong")
    kinds = {first["id"]: "1"}  # the imported lesson's id is lesson-1
    seeded = lifelong.study_arm(out, "lessons", kinds)
    learnt = lifelong.study_arm(out, "on", kinds)
    assert seeded["problems"] == learnt["problems"] == 2
    assert seeded["own_lesson_shown"] >= 1 and learnt["own_lesson_shown"] == 0
    assert seeded["remembered_shown"][0] >= 1 and learnt["remembered_shown"][0] == 0


def test_a_generated_problem_of_the_same_kind_and_numbers_is_a_copy() -> None:
    training = [Problem(id="t", problem="Ann has 3 pens and buys 4 more.", answer="7", kind="add")]
    held = [
        Problem(id="a", problem="Bo owns 3 cups; he gets 4 others. How many now?", answer="7",
                kind="add"),
        Problem(id="b", problem="Bo owns 3 cups; he gets 4 others. How many now?", answer="7",
                kind="more_than"),
    ]  # fmt: skip
    kept, overlap = deduplicated(held, training)
    assert [p.id for p in kept] == ["b"] and overlap.near == ["a"]


REPO = Path(__file__).parents[2]
STUDIES = sorted(REPO.glob("benchmarks/studies/*.yaml"))
IN_REPO = [  # studies whose full-size data ship with the repository (others read ../shared)
    path for path in STUDIES
    if (path.parent / load_study(path).problems.data).resolve().is_relative_to(REPO)
]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "toy"),
    [*((p, True) for p in STUDIES), *((p, False) for p in IN_REPO)],
    ids=lambda v: v.stem if isinstance(v, Path) else ("toy" if v else "full"),
)
def test_every_shipped_study_resolves_its_problems_plans_and_trainings(
    path: Path, toy: bool, tmp_path: Path
) -> None:
    from tmas.training.study_training import TrainingStudy

    study = TrainingStudy(load_study(path, toy=toy), tmp_path)
    problems, _ = study.problems()
    assert problems, "no problem left after deduplication"
    if not toy and study.file.problems.limit:
        assert len(problems) == study.file.problems.limit  # enough held out to fill the limit
    for name, condition in study.conditions.items():
        seed = study.file.seeds_of(name)[0]
        if condition.train is None:
            assert study.plan(name, seed).topology.name
        else:
            assert study.training_settings(name, condition.train, seed).seed == seed
