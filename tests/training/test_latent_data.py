"""What DiffMAS trains on: problem files with or without reference solutions, and rows exported
from saved runs, whose right rollouts become the reference solutions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tmas.training.data_files import DataFileError
from tmas.training.latent_chain import target_text
from tmas.training.latent_data import latent_examples


def exported(problem: str, gold: str, response: str, answer: str) -> dict:
    return {
        "prompt": [{"role": "user", "content": problem}],
        "_source": "normal",
        "reward_model": {"ground_truth": gold, "style": "rule"},
        "extra_info": {"problem": problem, "response": response, "response_answer": answer},
    }


def test_exported_rows_give_their_right_rollouts_as_solutions(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in (
        exported("2 + 3?", "5", "2 + 3 = 5, so \\boxed{5}", "5"),
        exported("4 + 4?", "8", "4 + 4 = 9, so \\boxed{9}", "9"),
        exported("2 + 3?", "5", "2 + 3 = 6, so \\boxed{6}", "6"),  # a wrong one beside a right
        exported("4 + 4?", "8", "4 + 4 = 7, so \\boxed{7}", "7"),  # no right one: answer once
    )))  # fmt: skip
    right, wrong = latent_examples(str(rows))
    assert (right.problem, right.answer) == ("2 + 3?", "5")
    assert right.solution == "2 + 3 = 5, so \\boxed{5}"
    assert wrong.solution is None  # a wrong rollout is no reference: the answer alone is taught
    assert target_text(right.answer, right.solution) == right.solution
    assert target_text(wrong.answer, wrong.solution) == "The answer is \\boxed{8}."


def test_problem_files_keep_their_reference_solutions(tmp_path: Path) -> None:
    data = tmp_path / "problems.jsonl"
    data.write_text(json.dumps({"id": "a", "problem": "1+1?", "answer": "2",
                                "solution": "One and one make two."}) + "\n")  # fmt: skip
    (example,) = latent_examples(str(data))
    assert example.solution == "One and one make two."
    assert target_text(example.answer, example.solution).endswith("The answer is \\boxed{2}.")


def test_exported_rows_without_their_problem_are_refused(tmp_path: Path) -> None:
    row = exported("x", "1", "", "")
    row["extra_info"]["problem"] = ""
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataFileError, match="without extra_info.problem"):
        latent_examples(str(rows))
