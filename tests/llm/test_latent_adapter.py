"""A LoRA adapter loaded into ``latent_mas`` (hf backend, real SmolLM2) belongs to the final
agent alone: the upstream agents' KV trace is the one the base weights build, bit for bit as
close as a CPU computes it, whether the run's agents built it or a store rebuilt it, and the
final agent reads it with the adapter on. The adapter's weights are random, so that it changes
every layer (a fresh LoRA adapter is the identity and could not tell)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import tmas
from tmas.llm.checkpoints import checkpoint_for
from tmas.llm.hf.latent_trace import LatentTrace, Segment
from tmas.llm.hf.model_loading import load_base, load_model
from tmas.llm.hf.trace_store import TRACES, TraceStore
from tmas.nodes.agents.latent_agents import final_prompt_ids, segments_before
from tmas.nodes.prompts import PromptSet
from tmas.training.trainer_runs import save_adapter

pytestmark = pytest.mark.slow

PROBLEM = "Tom has 3 apples and buys 4 more. How many apples does he have?"
CONFIG = {"n_candidates": 1, "temperature": 0, "roles": {"judger": {"max_tokens": 4}}}


@pytest.fixture(scope="module")
def adapter(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A LoRA adapter on every linear layer of SmolLM2, with random weights."""
    from peft import LoraConfig, get_peft_model

    base, tokenizer = load_base(checkpoint_for("smollm2"), "smollm2", "cpu")
    torch.manual_seed(0)
    lora = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM",
                      init_lora_weights=False)  # fmt: skip
    model = get_peft_model(base, lora)
    return str(save_adapter(model, tokenizer, "smollm2", tmp_path_factory.mktemp("random")))


def built(model, segments: list[Segment]) -> LatentTrace:
    """The trace ``segments`` leave on ``model`` as it is (an adapter, if any, on)."""
    trace = LatentTrace(model)
    for segment in segments:
        trace.add(segment)
    return trace


def same_cache(one: LatentTrace, other: LatentTrace) -> bool:
    """Whether two traces hold the same keys and values in every layer."""
    return one.length() == other.length() and all(
        torch.allclose(a.keys, b.keys, atol=1e-4) and torch.allclose(a.values, b.values, atol=1e-4)
        for a, b in zip(one.cache.layers, other.cache.layers, strict=True)
    )


def test_upstream_agents_run_on_the_base_weights_and_the_judger_on_the_adapter(
    adapter: str, tmp_path: Path
) -> None:
    backend = {"kind": "hf", "model": "smollm2", "adapter": adapter}
    outcome = tmas.solve(PROBLEM, topology="latent_mas", backend=backend, config=CONFIG,
                         db=tmp_path / "runs.sqlite", run_id="adapted")  # fmt: skip
    segments = segments_before(outcome.state)
    assert [s.agent for s in segments] == ["planner", "critic", "refiner"]
    adapted = load_model("smollm2", adapter)  # the run's model: the process loads it once
    assert type(adapted.model).__name__.startswith("Peft")
    base = load_model("smollm2").model

    rebuilt = TRACES.rebuilt_segments
    held = TRACES.trace_for("adapted", outcome.state["iteration"], adapted.model, segments)
    assert TRACES.rebuilt_segments == rebuilt  # the trace the run's agents built
    on_base = built(base, segments)
    assert not same_cache(built(adapted.model, segments), on_base)  # the adapter would show
    assert same_cache(held, on_base)  # the agents ran without it
    rebuilt_elsewhere = TraceStore().trace_for("adapted", 1, adapted.model, segments)
    assert same_cache(rebuilt_elsewhere, on_base)  # a resumed run rebuilds the same

    judger = final_prompt_ids(adapted.tokenizer, PromptSet(), "judger", PROBLEM)
    read_with_adapter = held.next_logits(judger)
    assert not torch.allclose(read_with_adapter, on_base.next_logits(judger), atol=1e-3)
    with adapted.model.disable_adapter():
        assert torch.allclose(held.next_logits(judger), on_base.next_logits(judger), atol=1e-3)
