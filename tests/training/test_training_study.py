"""Studies whose conditions train, then evaluate, on SmolLM2: rejection-sampling SFT at two
seeds (two trainings, two different adapters), GRPO warm-started from the SFT adapter of the
same seed, the held-out problems without the training rows' problems, a rerun that trains
nothing again, in place or with the study folder moved; the seeded LoRA initialisation;
``tmas train sft`` on rows without a verified response."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli_helpers import invoke, one_line
from tmas.eval.data import load_problems

pytestmark = pytest.mark.slow

TWO_PROBLEMS = load_problems("gsm8k")[:2]


def exported_row(problem: str, gold: str, response: str, answer: str) -> dict[str, Any]:
    """A row as ``tmas export rollouts`` writes it (initial prompt, one response)."""
    return {
        "prompt": [{"role": "system", "content": "Solve it."},
                   {"role": "user", "content": problem}],
        "data_source": "math", "ability": "math", "_source": "normal",
        "reward_model": {"ground_truth": gold, "style": "rule"},
        "extra_info": {"problem": problem, "response": response, "response_answer": answer,
                       "_source": "normal", "guidelines": [], "experiences": []},
    }  # fmt: skip


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    first = TWO_PROBLEMS[0]
    path = tmp_path_factory.mktemp("rows") / "rows.jsonl"
    written = [
        exported_row(first.problem, first.answer, f"So \\boxed{{{first.answer}}}.", first.answer),
        exported_row("1 + 1?", "2", "1 + 1 = 2. \\boxed{2}", "2"),
        exported_row("2 + 2?", "4", "2 + 2 = 5. \\boxed{5}", "5"),  # wrong: left out of SFT
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in written))
    return path


def test_a_training_study_trains_each_seed_and_warm_starts_from_the_same_seed(
    tmp_path: Path, rows: Path
) -> None:
    answer = {"n_candidates": 1, "temperature": 0, "solver_max_tokens": 4}
    study = {
        "name": "training", "reference": "sft", "seeds": [0, 1], "self_consistency": False,
        "problems": {"data": "gsm8k", "limit": 1},
        "backend": {"kind": "hf", "model": "smollm2"},
        "pilot": {"problems": 1},
        "conditions": {
            "sft": {"graph": "majority_vote", "settings": answer,
                    "train": {"kind": "sft", "settings": {"data": str(rows), "steps": 1,
                                                          "batch_size": 1}}},
            "sft_grpo": {"graph": "majority_vote", "settings": answer, "seeds": [0],
                         "train": {"kind": "grpo", "warm_start": "sft", "settings": {
                             "data": str(rows), "steps": 1, "num_generations": 2,
                             "max_completion_length": 8, "judge": {"enabled": False}}}},
        },
    }  # fmt: skip
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study), encoding="utf-8")
    out = tmp_path / "out"
    result = invoke(tmp_path, "study", str(path), "--out", str(out))
    assert result.exit_code == 0, result.output
    text = one_line(result.output)
    assert "training sft/seed-0 (sft)" in text and "trained sft_grpo/seed-0: 1 steps" in text
    design = json.loads((out / "design.json").read_text())
    assert design["problem_ids"] == [TWO_PROBLEMS[1].id]  # the training row's problem left out
    assert design["deduplication"]["exact"] == 1
    assert set(design["trainings"]) == {"sft/seed-0", "sft/seed-1", "sft_grpo/seed-0"}
    sft = {seed: out / "training" / "sft" / f"seed-{seed}" for seed in (0, 1)}
    records = {seed: json.loads((sft[seed] / "training.json").read_text()) for seed in sft}
    assert records[0]["rows"]["used"] == 2 and records[0]["rows"]["wrong"] == 1
    assert adapter_weights(sft[0]) != adapter_weights(sft[1])  # two seeds: two trainings
    grpo = json.loads((out / "training" / "sft_grpo" / "seed-0" / "training.json").read_text())
    assert grpo["settings"]["init_adapter"] == str((sft[0] / "adapter").resolve())
    plan = design["plans"]["sft"]
    assert plan["backend"]["adapter"] == str((sft[0] / "adapter").resolve())
    report = json.loads((out / "report.json").read_text())
    assert report["conditions"]["sft_grpo"]["seeds"] == [0]
    assert report["conditions"]["sft"]["settings"]["train"]["kind"] == "sft"
    assert report["trainings"]["sft_grpo/seed-0"]["spread"]["steps"] == 1  # what GRPO had
    assert "| sft_grpo/seed-0 | 1 |" in (out / "report.md").read_text()
    again = invoke(tmp_path, "study", str(path), "--out", str(out))
    assert again.exit_code == 0, again.output
    assert "(sft) in" not in again.output and "(grpo) in" not in again.output  # all kept
    rows_before = (out / "conditions" / "sft_grpo" / "seed-0" / "results.jsonl").read_text()
    weights = sft[0] / "adapter" / "adapter_model.safetensors"
    trained_at = weights.stat().st_mtime_ns
    moved = tmp_path / "moved"
    out.rename(moved)  # a study folder taken elsewhere keeps its trainings and its answers
    elsewhere = invoke(tmp_path, "study", str(path), "--out", str(moved))
    assert elsewhere.exit_code == 0, elsewhere.output
    assert "(sft) in" not in elsewhere.output and "(grpo) in" not in elsewhere.output
    kept = moved / "training" / "sft" / "seed-0" / "adapter" / "adapter_model.safetensors"
    assert kept.stat().st_mtime_ns == trained_at
    rows_after = (moved / "conditions" / "sft_grpo" / "seed-0" / "results.jsonl").read_text()
    assert rows_after == rows_before


def adapter_weights(folder: Path) -> list[float]:
    from safetensors.torch import load_file

    tensors = load_file(str(folder / "adapter" / "adapter_model.safetensors"))
    return [round(float(t.float().sum()), 6) for _, t in sorted(tensors.items())]


def test_the_lora_initialisation_follows_the_seed_whatever_ran_before() -> None:
    import torch

    from tmas.llm.checkpoints import checkpoint_for
    from tmas.llm.hf.model_loading import load_base
    from tmas.training.rejection_sft import SFTSettings
    from tmas.training.sft_loop import lora_model

    def initial(seed: int) -> torch.Tensor:
        base, _ = load_base(checkpoint_for("smollm2"), "smollm2", "cpu")
        torch.rand(100)  # whatever drew on the generator before
        model = lora_model(base, SFTSettings(data="/rows.jsonl", seed=seed))
        weights = [p for n, p in model.named_parameters() if "lora_A" in n]
        return torch.cat([w.detach().flatten() for w in weights[:4]])

    assert torch.equal(initial(3), initial(3))
    assert not torch.equal(initial(3), initial(4))


def test_sft_without_a_verified_response_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "wrong.jsonl"
    path.write_text(json.dumps(exported_row("2 + 2?", "4", "\\boxed{5}", "5")) + "\n")
    result = invoke(tmp_path, "train", "sft", str(path), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2, result.output
    assert "no verified response to learn from" in one_line(result.output)
    assert not (tmp_path / "o" / "adapter").exists()
