"""GRPO that learns, on the real SmolLM2: one overfittable prompt (pick 1, 2 or 3; the reward
pays 2), a few steps of ``tmas train grpo``. The mean reward of the last steps rises above the
first steps', the LoRA weights moved away from their zero start, and the adapter's greedy answer
is the paid one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file

from tmas.llm.hf.model_loading import load_model
from tmas.training.data_files import write_rows
from tmas.training.spread_filter import complete_chats

pytestmark = pytest.mark.slow

PROMPT = [
    {"role": "system", "content": "You answer with one number written as \\boxed{n}."},
    {"role": "user", "content": "Pick one of the numbers 1, 2 or 3 and write it as \\boxed{n}."},
]
STEPS = 10


def test_reward_rises_and_the_adapter_moves(tmp_path: Path) -> None:
    row = {
        "prompt": PROMPT, "data_source": "math", "ability": "math", "_source": "normal",
        "reward_model": {"ground_truth": "2", "style": "rule"}, "extra_info": {"problem": "pick"},
    }  # fmt: skip
    write_rows([row], tmp_path / "rows.jsonl")
    out = tmp_path / "train"
    done = subprocess.run(
        [sys.executable, "-m", "tmas.cli", "train", "grpo", str(tmp_path / "rows.jsonl"),
         "--out", str(out), "--steps", str(STEPS), "--generations", "8",
         "--max-completion-length", "12", "--learning-rate", "2e-3", "--temperature", "1.0",
         "--no-judge", "--no-drop-zero-spread", "--save-every", str(STEPS), "--quiet"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    rewards = [line["rewards/correctness/mean"] for line in lines if "loss" in line]
    assert len(rewards) == STEPS
    first, last = sum(rewards[:3]) / 3, sum(rewards[-3:]) / 3
    assert last >= first + 0.25, rewards

    weights = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    lora_b = [tensor for name, tensor in weights.items() if "lora_B" in name]
    assert lora_b and max(float(t.abs().max()) for t in lora_b) > 1e-4  # B starts at zero

    loaded = load_model("smollm2", str(out), "cpu")
    (answer,) = complete_chats(loaded, [PROMPT], 1, 0, 12)[0]
    assert "\\boxed{2}" in answer, answer
