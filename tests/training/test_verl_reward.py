"""verl's reward hook as verl calls it: rows written by the exporter, read back the way verl's
dataset reads a parquet (``datasets``), and ``compute_score`` called with exactly the keyword
arguments verl's reward manager passes (``data_source``, ``solution_str``, ``ground_truth``,
``extra_info``; never the row's ``_source`` column)."""

from __future__ import annotations

from pathlib import Path

import datasets
import numpy as np
import pytest
from langchain_core.language_models import FakeListChatModel

from tmas.nodes.prompts import PromptSet
from tmas.storage.run_registry import RunRecord
from tmas.training import verl_reward
from tmas.training.data_files import write_rows
from tmas.training.novelty import NoveltyJudge
from tmas.training.rewards import HybridReward
from tmas.training.rollouts import rollout_row
from tmas.training.verl_reward import compute_score

RIGHT, COPIED = "3 + 4 = 7, so \\boxed{7}", "\\boxed{8}"
BANK = ["Add the two amounts directly"]


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> None:
    """verl's reward with a judge that finds every strategy new."""
    reward = HybridReward(judge=NoveltyJudge(FakeListChatModel(responses=["Novel: yes"])))
    monkeypatch.setattr(verl_reward, "_reward", lambda: reward)


def exported_rows(tmp_path: Path) -> dict[str, dict]:
    """One exported row of each kind, through a parquet file read as verl reads it."""
    record = RunRecord("r", 0.0, "3 + 4?", "7", "tmas", {}, {}, None, "done", None, None)
    parent = {"index": 0, "text": "3 + 4 = 8, so \\boxed{8}", "answer": "8", "summary": "wrong"}
    tasks = {
        "normal": {"problem": "3 + 4?", "plan": {"iteration": 1, "index": 0, "mode": "initial"}},
        "experience": {"problem": "3 + 4?", "parent": parent, "experiences": [],
                       "plan": {"iteration": 2, "index": 0, "mode": "exploit"}},
        "guideline": {"problem": "3 + 4?", "guidelines": BANK,
                      "plan": {"iteration": 2, "index": 1, "mode": "explore"}},
    }  # fmt: skip
    rows = [rollout_row(task, PromptSet(), record, None) for task in tasks.values()]
    path = tmp_path / "rows.parquet"
    write_rows(rows, path)
    loaded = datasets.load_dataset("parquet", data_files=str(path))["train"]
    return {row["_source"]: row for row in loaded}


def verl_call(row: dict, response: str) -> dict:
    return compute_score(
        data_source=row["data_source"],
        solution_str=response,
        ground_truth=row["reward_model"]["ground_truth"],
        extra_info=row["extra_info"],
    )


def test_every_kind_is_scored_as_its_kind(tmp_path: Path, judged: None) -> None:
    rows = exported_rows(tmp_path)
    assert {kind: row["extra_info"]["_source"] for kind, row in rows.items()} == {
        kind: kind for kind in rows
    }
    normal = verl_call(rows["normal"], RIGHT)
    assert (normal["score"], normal["experience"], normal["novelty"]) == (1.0, 0.0, 0.0)
    right, copied = verl_call(rows["experience"], RIGHT), verl_call(rows["experience"], COPIED)
    assert (right["score"], copied["score"], copied["experience"]) == (1.5, 0.0, 0.0)
    novel = verl_call(rows["guideline"], RIGHT)
    assert (novel["score"], novel["novelty"], novel["judge_failed"]) == (1.5, 1.0, 0.0)


def test_the_kind_comes_from_extra_info_without_a_mode(judged: None) -> None:
    """Rows in the announced data layout carry ``_source`` and the banks, no mode."""
    extra = {"_source": "guideline", "problem": "3 + 4?", "guidelines": np.array(BANK)}
    assert compute_score("math", RIGHT, "7", extra)["novelty"] == 1.0
    experience = {"_source": "experience", "parent_answer": "8"}
    assert compute_score("math", COPIED, "7", experience)["experience"] == 0.0


def test_a_failed_judgement_is_flagged_and_scored_without_novelty(monkeypatch) -> None:
    reward = HybridReward(judge=NoveltyJudge(FakeListChatModel(responses=["I cannot tell."])))
    monkeypatch.setattr(verl_reward, "_reward", lambda: reward)
    scored = compute_score("math_grm", RIGHT, "7", {"problem": "?", "guidelines": BANK})
    assert (scored["score"], scored["novelty"], scored["judge_failed"]) == (1.0, 0.0, 1.0)
