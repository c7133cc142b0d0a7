"""A reward model training is a function of its settings: the fresh score head (and the LoRA
adapter) are drawn under the training's seed, so whatever used the random generators before in
the process does not change what is trained (the module's ``--graph auto`` tests depended on
the tests that ran before them until this held)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import trl  # noqa: F401 - the train extra, which the test command installs: missing, this fails
from safetensors.torch import load_file

from tmas.orchrm.rm_settings import RewardModelSettings
from tmas.orchrm.rm_training import train_reward_model

pytestmark = pytest.mark.slow

PAIRS = [
    {"input": f"What is {a} + {a + 1}?", "chosen": "topology: cot", "rejected": "topology: refine"}
    for a in range(4)
]


def trained_weights(out: Path, pairs: Path, seed: int) -> dict[str, torch.Tensor]:
    settings = RewardModelSettings(
        pairs=str(pairs), eval_fraction=0.0, epochs=1, batch_size=4, max_length=64, seed=seed
    )
    record = train_reward_model(settings, out, progress=False)
    return load_file(str(Path(record["adapter"]) / "adapter_model.safetensors"))


def test_the_same_seed_trains_the_same_reward_model_whatever_ran_before(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    torch.manual_seed(1)
    first = trained_weights(tmp_path / "a", pairs, seed=0)
    torch.manual_seed(2)
    torch.rand(1000)  # another history of the generators
    second = trained_weights(tmp_path / "b", pairs, seed=0)
    other_seed = trained_weights(tmp_path / "c", pairs, seed=1)
    heads = [name for name in first if "score" in name]
    assert heads, f"no score head among the saved weights: {sorted(first)[:5]}"
    assert first.keys() == second.keys()
    assert all(torch.equal(first[name], second[name]) for name in first)
    assert any(not torch.equal(first[name], other_seed[name]) for name in heads)
