"""GRPO that learns, on the real SmolLM2: one overfittable prompt ("What is 1 + 1?", answered
right about one time in six at temperature 0.7), a few steps of ``tmas train grpo``. The mean
reward of the last steps rises above the first steps', the LoRA weights moved away from their
zero start, and the adapter's greedy answer is the right one. Completions are cut at 16 tokens,
so truncated ones stay in the loss (``--no-mask-truncated``): masked, none would teach."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file

from tmas.answers.parsing import extract_answer
from tmas.llm.hf.model_loading import load_model
from tmas.training.data_files import write_rows
from tmas.training.spread_filter import complete_chats

pytestmark = pytest.mark.slow

SYSTEM = (
    "Reply with only the answer in the form \\boxed{n}. "
    "Example: for 'What is 2 + 2?' reply \\boxed{4}."
)
PROMPT = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What is 1 + 1?"}]
STEPS = 8


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
         "--max-completion-length", "16", "--learning-rate", "1e-3", "--temperature", "0.7",
         "--no-mask-truncated", "--no-judge", "--save-every", str(STEPS), "--quiet"],
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
    (answer,) = complete_chats(loaded, [PROMPT], 1, 0, 16)[0]
    assert extract_answer(answer).value == "2", answer
