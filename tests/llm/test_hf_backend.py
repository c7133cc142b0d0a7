"""The hf backend on real SmolLM2 (its GGUF de-quantised once into a plain checkpoint without
the GGUF quantizer): seeded sampling, stop strings, several answers per call, exact usage, greedy
calls decoded as one batch, and adapters for another base refused in one line (a TMAS run on
every role with a trained adapter is in ``tests/training/test_grpo_real.py``)."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from typer.testing import CliRunner

from tmas.cli import app
from tmas.llm.checkpoints import checkpoint_for
from tmas.llm.hf.batching import batcher_for
from tmas.llm.hf.model_loading import AdapterMismatchError, load_model
from tmas.llm.hf.transformers_chat import ChatHF

pytestmark = pytest.mark.slow

PROBLEM = "Tom has 3 apples and buys 4 more. How many apples does he have now?"


def test_the_converted_checkpoint_carries_no_gguf_quantizer() -> None:
    config = json.loads((Path(checkpoint_for("smollm2")) / "config.json").read_text())
    assert "quantization_config" not in config
    assert load_model("smollm2").model.dtype.is_floating_point


def test_seeds_stops_choices_and_usage() -> None:
    chat = ChatHF(model="smollm2", max_tokens=24, temperature=0.9, seed=5)
    first, again = chat.invoke(PROBLEM), chat.invoke(PROBLEM)
    assert first.content == again.content
    other = chat.invoke(PROBLEM, seed=6)
    assert other.content != first.content
    tokenizer = chat.loaded.tokenizer
    usage = first.usage_metadata
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": PROBLEM}], tokenize=False, add_generation_prompt=True
    )
    assert usage["input_tokens"] == len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert 0 < usage["output_tokens"] <= 24
    greedy = ChatHF(model="smollm2", max_tokens=24, temperature=0)
    text = greedy.invoke(PROBLEM).content
    word = text.split()[2]
    stopped = greedy.invoke(PROBLEM, stop=[word])
    assert word not in stopped.content and text.startswith(stopped.content)
    assert stopped.response_metadata["finish_reason"] == "stop"
    result = chat.generate([[HumanMessage(PROBLEM)]], n=3)
    assert len(result.generations[0]) == 3


def test_an_adapter_for_another_base_is_refused(tmp_path: Path) -> None:
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8}))
    shape = {"model_type": "qwen2", "hidden_size": 1536, "num_hidden_layers": 28}
    (adapter / "tmas_adapter.json").write_text(
        json.dumps({"base_model": "qwen", "base_shape": shape})
    )
    with pytest.raises(AdapterMismatchError, match="trained on qwen, not on smollm2"):
        load_model("smollm2", str(adapter))
    db = tmp_path / "runs.sqlite"
    result = CliRunner().invoke(
        app,
        ["solve", "1+1?", "--backend", "hf", "--model", "smollm2", "--adapter", str(adapter),
         "--db", str(db)],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "was trained on qwen, not on smollm2 (model_type, hidden_size" in result.output
    assert not db.exists()


def test_greedy_calls_waiting_together_are_decoded_as_one_batch() -> None:
    """Four greedy calls made while the device is busy: one batch, the same answers and usage
    as one call at a time (prompts of different lengths: padding must not leak in)."""
    problems = [PROBLEM, "2+2?", "Name a colour.", "Sara has 11 apples and eats 6. How many?"]
    alone = ChatHF(model="smollm2", max_tokens=20, temperature=0)
    expected = [alone.invoke(p) for p in problems]
    together = ChatHF(model="smollm2", max_tokens=20, temperature=0, max_batch=4)
    lock = together.loaded.lock
    with ThreadPoolExecutor(4) as pool:
        with lock:  # the device is busy while the calls arrive
            futures = [pool.submit(together.invoke, p) for p in problems]
            waiting = batcher_for(together.loaded)._waiting
            while len(waiting) < len(problems):
                time.sleep(0.01)
        answers = [f.result(timeout=120) for f in futures]
    assert [a.content for a in answers] == [e.content for e in expected]
    assert [a.usage_metadata for a in answers] == [e.usage_metadata for e in expected]
    finish = [a.response_metadata["finish_reason"] for a in answers]
    assert finish == [e.response_metadata["finish_reason"] for e in expected]
