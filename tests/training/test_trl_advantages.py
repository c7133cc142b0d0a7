"""The hybrid reward through TRL's own GRPOTrainer (its reward and advantage code, on a tiny
random model whose completions are scripted): a completion whose judgement failed gets None
from every reward function, stays out of its group's baseline and gets no advantage; a group
whose completions all scored the same is masked out of the loss; and the counters of
``training.json`` (excluded completions, dropped groups) and the per-step metrics count
exactly those."""

from __future__ import annotations

import statistics
from typing import Any

import pytest
import torch
from langchain_core.language_models import FakeListChatModel

from tmas.training.novelty import NoveltyJudge
from tmas.training.rewards import HybridReward
from tmas.training.spread import spread_filtering_trainer
from tmas.training.trl_rewards import TRLRewards

RIGHT = "3 + 4 = 7, so \\boxed{7}."
WRONG = "3 * 4 = 12, so \\boxed{12}."
GROUP = 4  # completions per prompt
GUIDELINE = {
    "prompt": "Tom has 3 apples and buys 4 more. How many now? Use a new strategy.",
    "_source": "guideline",
    "reward_model": {"ground_truth": "7"},
    "extra_info": {"problem": "3 apples and 4 more?", "guidelines": ["Add them directly"]},
}
NORMAL = {**GUIDELINE, "_source": "normal", "extra_info": {"problem": "3 apples and 4 more?"}}


def byte_tokenizer() -> Any:
    """A byte-level tokenizer built in code (no download): every byte one token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {char: index for index, char in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab |= {"<eos>": len(vocab), "<pad>": len(vocab) + 1}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<eos>", pad_token="<pad>")


def trainer_for(rewards: TRLRewards, completions: list[str], tmp_path) -> Any:
    """TRL's GRPOTrainer (spread filtering on) over a one-layer random Llama, whose
    generation returns ``completions`` (each ended by the end token)."""
    from datasets import Dataset
    from transformers import LlamaConfig, LlamaForCausalLM
    from trl import GRPOConfig

    tokenizer = byte_tokenizer()
    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32,
            num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
            max_position_embeddings=256, eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
    )  # fmt: skip
    config = GRPOConfig(
        output_dir=str(tmp_path / "grpo"), per_device_train_batch_size=2 * GROUP,
        num_generations=GROUP, max_completion_length=32, scale_rewards="group", beta=0.0,
        reward_weights=rewards.weights(), report_to="none", use_cpu=True,
    )  # fmt: skip
    trainer_class = spread_filtering_trainer(rewards.last_totals, drop=True)
    trainer = trainer_class(
        model=model,
        reward_funcs=rewards.functions(),
        args=config,
        train_dataset=Dataset.from_list([GUIDELINE, NORMAL]),
        processing_class=tokenizer,
    )
    scripted = [tokenizer(text)["input_ids"] + [tokenizer.eos_token_id] for text in completions]

    def generate(prompt_ids, images, multimodal_fields, num_generations, **_):  # noqa: ANN001
        assert len(prompt_ids) == len(scripted)
        return scripted, None  # no sampling log-probabilities, as without vLLM

    trainer._generate_single_turn = generate
    trainer.model.train()
    return trainer


@pytest.fixture
def scored(tmp_path) -> tuple[Any, TRLRewards, dict[str, Any]]:
    """One batch through TRL: a guideline group whose second judgement fails (its completion
    left out), then a normal group whose four completions are all right (no spread)."""
    replies = ["Novel: yes", "I cannot decide.", "Novel: no"]  # the second fails
    judge = NoveltyJudge(FakeListChatModel(responses=replies))
    rewards = TRLRewards(HybridReward(judge=judge))
    completions = [RIGHT, RIGHT, RIGHT, WRONG] + [RIGHT] * GROUP
    trainer = trainer_for(rewards, completions, tmp_path)
    output = trainer._generate_and_score_completions([GUIDELINE] * GROUP + [NORMAL] * GROUP)
    return trainer, rewards, output


def test_a_left_out_completion_gets_no_advantage_and_stays_out_of_the_baseline(scored) -> None:
    trainer, rewards, output = scored
    assert rewards.last_totals() == [1.5, None, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    advantages = output["advantages"].tolist()
    assert advantages[1] == 0.0  # the completion whose judgement failed: no advantage
    scored_totals = [1.5, 1.0, 0.0]  # the baseline is the mean of the three scored ones
    mean, spread = statistics.fmean(scored_totals), statistics.stdev(scored_totals)
    expected = [(t - mean) / (spread + 1e-4) for t in scored_totals]
    assert [advantages[0], advantages[2], advantages[3]] == pytest.approx(expected, abs=1e-5)
    as_zero = [1.5, 0.0, 1.0, 0.0]  # had TRL scored it 0, the baseline would have moved
    assert statistics.fmean(as_zero) != pytest.approx(mean)
    assert advantages[GROUP:] == [0.0] * GROUP  # the group without spread
    logged = trainer._metrics["train"]["reward"]  # TRL's mean reward leaves it out too
    assert logged == [pytest.approx(statistics.fmean([1.5, 1.0, 0.0] + [1.0] * GROUP))]


def test_a_group_without_spread_is_masked_and_the_counters_count_exactly(scored) -> None:
    trainer, rewards, output = scored
    mask = output["completion_mask"]
    assert mask[GROUP:].sum() == 0  # the normal group: out of the loss
    assert (mask[:GROUP].sum(dim=1) > 0).all()  # the guideline group stays in it
    assert int(output["num_items_in_batch"]) == int(mask.sum())
    # What training.json reports (excluded_completions, dropped_zero_spread_groups) ...
    assert (rewards.excluded, rewards.reward.judge_failures, trainer.dropped_groups) == (1, 1, 1)
    # ... and what metrics.jsonl gets for the step
    metrics = trainer._metrics["train"]
    assert metrics["spread/zero_spread_groups"] == [1.0] and metrics["judge_failures"] == [1.0]
    # novelty yes, no and 0 (a wrong answer is not paid); the failed judgement left out
    assert metrics["reward/guideline/novelty"] == [pytest.approx(1 / 3)]
