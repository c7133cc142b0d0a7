"""The shared latent KV trace on a real model (SmolLM2 through transformers): its length is the
sum of its segments, 0 latent steps is a plain prefill, the final agent's logits depend on the
upstream agents, and a rebuilt trace is the same trace."""

from __future__ import annotations

import pytest
import torch  # noqa: E402
import transformers  # noqa: F401 - the train extra, which the test command installs

from tmas.llm.hf.latent_trace import LatentTrace, Segment  # noqa: E402
from tmas.llm.hf.model_loading import load_model  # noqa: E402
from tmas.llm.hf.trace_store import TraceStore  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def loaded():
    return load_model("smollm2", None, "cpu")


def ids(loaded, text: str) -> tuple[int, ...]:
    return tuple(loaded.tokenizer(text, add_special_tokens=False)["input_ids"])


def segment(loaded, text: str, steps: int, realign: bool = True, keep: bool = True) -> Segment:
    return Segment("agent", ids(loaded, text), steps, realign, keep)


PLAN, CHECK, ASK = "Plan: add 3 and 4.", " Check: the sum is right.", " The answer is"


def test_the_cache_holds_exactly_the_segments(loaded) -> None:
    trace = LatentTrace(loaded.model)
    kept, dropped = segment(loaded, PLAN, 5), segment(loaded, CHECK, 3, keep=False)
    trace.add(kept)
    assert trace.length() == len(kept.prompt_ids) + 5
    trace.add(dropped)
    assert trace.length() == kept.length + dropped.length == len(kept.prompt_ids) + 5 + 3
    # positions keep counting over the dropped prompt
    assert trace.next_position == len(kept.prompt_ids) + 5 + len(dropped.prompt_ids) + 3


def test_no_latent_steps_is_a_prefill_of_the_prompts(loaded) -> None:
    trace = LatentTrace(loaded.model)
    trace.add(segment(loaded, PLAN, 0))
    trace.add(segment(loaded, CHECK, 0))
    whole = list(ids(loaded, PLAN) + ids(loaded, CHECK) + ids(loaded, ASK))
    with torch.no_grad():
        plain = loaded.model(input_ids=torch.tensor([whole])).logits[0, -1]
    assert torch.allclose(trace.next_logits(list(ids(loaded, ASK))), plain, atol=1e-3)


def final_logits(loaded, plan: str, steps: int = 4, realign: bool = True) -> torch.Tensor:
    trace = LatentTrace(loaded.model)
    trace.add(segment(loaded, plan, steps, realign))
    trace.add(segment(loaded, CHECK, steps, realign))
    return trace.next_logits(list(ids(loaded, ASK)))


def test_the_final_logits_depend_on_the_upstream_trace(loaded) -> None:
    base = final_logits(loaded, PLAN)
    assert not torch.allclose(base, final_logits(loaded, "Plan: multiply 3 by 4."), atol=1e-2)
    assert not torch.allclose(base, final_logits(loaded, PLAN, steps=0), atol=1e-2)
    assert torch.equal(base, final_logits(loaded, PLAN))  # deterministic


def test_with_tied_embeddings_realignment_is_the_norm_rescale_alone(loaded) -> None:
    # SmolLM2 ties its input and output embeddings: the realignment matrix is close to the
    # identity, so with the rescale applied either way, realigning changes next to nothing
    assert loaded.model.config.tie_word_embeddings
    assert torch.allclose(final_logits(loaded, PLAN), final_logits(loaded, PLAN, realign=False),
                          atol=1e-2)  # fmt: skip


def test_decoding_leaves_the_trace_as_it_was(loaded) -> None:
    trace = LatentTrace(loaded.model)
    trace.add(segment(loaded, PLAN, 4))
    before = (trace.length(), trace.next_position)
    greedy = trace.decode(list(ids(loaded, ASK)), max_tokens=6, eos_ids=set())
    assert (trace.length(), trace.next_position) == before
    assert trace.decode(list(ids(loaded, ASK)), max_tokens=6, eos_ids=set()) == greedy
    sampled = [
        trace.decode(list(ids(loaded, ASK)), max_tokens=6, eos_ids=set(), temperature=1.0, seed=s)
        for s in (1, 1, 2)
    ]
    assert sampled[0] == sampled[1] and len(sampled[0][0]) == 6


def test_a_store_rebuilds_the_same_trace_from_its_segments(loaded) -> None:
    segments = [segment(loaded, PLAN, 4), segment(loaded, CHECK, 4, keep=False)]
    first = TraceStore()
    original = first.trace_for("run", 1, loaded.model, segments)
    assert first.trace_for("run", 1, loaded.model, segments) is original  # held: not rebuilt
    assert first.rebuilt_segments == 2
    fresh = TraceStore()  # another process
    rebuilt = fresh.trace_for("run", 1, loaded.model, segments)
    assert rebuilt is not original and fresh.rebuilt_segments == 2
    ask = list(ids(loaded, ASK))
    assert torch.equal(rebuilt.next_logits(ask), original.next_logits(ask))
    assert first.trace_for("run", 1, loaded.model, segments[:1]).length() == segments[0].length
    assert first.trace_for("run", 2, loaded.model, []).length() == 0  # the next iteration
    assert len(first) == 1  # a run keeps the trace of its current iteration only


def test_a_segment_that_fails_halfway_leaves_the_trace_as_it_was(loaded, monkeypatch) -> None:
    trace = LatentTrace(loaded.model)
    trace.add(segment(loaded, PLAN, 2))
    before = trace.mark()
    real, calls = trace.forward, []

    def failing(**kwargs):
        calls.append(1)
        if len(calls) == 3:  # in the middle of the latent steps
            raise RuntimeError("out of memory")
        return real(**kwargs)

    monkeypatch.setattr(trace, "forward", failing)
    with pytest.raises(RuntimeError, match="out of memory"):
        trace.add(segment(loaded, CHECK, 5))
    assert trace.mark() == before and len(trace.segments) == 1


def test_latent_inputs_take_the_embedding_norm_with_or_without_realignment(loaded) -> None:
    trace = LatentTrace(loaded.model)
    hidden = torch.randn(1, 1, loaded.model.config.hidden_size) * 40  # far from embedding size
    mean_norm = loaded.model.get_input_embeddings().weight.float().norm(dim=1).mean()
    for realign in (True, False):
        step = trace.latent_input(hidden, realign)
        assert torch.allclose(step.float().norm(dim=-1), mean_norm, rtol=1e-3)
