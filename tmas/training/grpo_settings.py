"""The settings of a GRPO training run, saved beside its output so that a rerun resumes only
the same training."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tmas.training.rewards import RewardWeights


class JudgeSettings(BaseModel):
    """The novelty judge: a model of one of the framework's backends, named explicitly, or the
    base model being trained when ``self_judge`` says so; none when disabled (novelty is then
    not scored).

    Example:
        >>> JudgeSettings(model="qwen", backend="llamacpp").named
        True
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    backend: str = "hf"
    model: str | None = None
    base_url: str | None = None
    self_judge: bool = False
    prompt_file: str | None = None
    max_tokens: int = Field(default=64, ge=16)

    @property
    def named(self) -> bool:
        """Whether a judge model is named (or the base model was chosen as its own judge)."""
        return self.model is not None or self.self_judge


class GRPOSettings(BaseModel):
    """What ``tmas train grpo`` trains: data, base model, LoRA, GRPO, TRL and reward settings.

    ``max_prompt_length``: rows whose prompt is longer (in tokens) are left out before training
    and counted (the installed TRL does not cut prompts); ``mask_truncated_completions``:
    completions cut by the budget add nothing to the loss; ``scale_rewards``: TRL's
    normalisation of the group's rewards (``group``: by the group's spread, ``batch``, ``none``);
    ``drop_zero_spread``: groups whose completions all scored the same are left out of the loss
    (they carry no advantage, only the KL term and the token count), counted per step.

    Example:
        >>> GRPOSettings(data="/d.parquet").batch_size, GRPOSettings(data="/d").scale_rewards
        (4, 'group')
    """

    model_config = ConfigDict(extra="forbid")

    data: str
    model: str = "smollm2"
    init_adapter: str | None = Field(
        default=None, description="a LoRA adapter to continue (a warm start, e.g. tmas train sft)"
    )
    steps: int = Field(default=50, ge=1)
    num_generations: int = Field(default=4, ge=2)
    prompts_per_step: int = Field(default=1, ge=1)
    max_completion_length: int = Field(default=128, ge=1)
    max_prompt_length: int = Field(default=1024, ge=1)
    mask_truncated_completions: bool = True
    scale_rewards: Literal["group", "batch", "none"] = "group"
    loss_type: str = "dapo"
    drop_zero_spread: bool = True
    learning_rate: float = Field(default=5e-5, gt=0)
    beta: float = Field(default=0.04, ge=0, description="KL coefficient (0: no reference)")
    temperature: float = Field(default=1.0, gt=0)
    lora_r: int = Field(default=8, ge=1)
    lora_alpha: int = Field(default=16, ge=1)
    lora_dropout: float = Field(default=0.0, ge=0, lt=1)
    seed: int = 0
    save_every: int = Field(default=1, ge=1, description="steps between checkpoints")
    weights: RewardWeights = Field(default_factory=RewardWeights)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    use_vllm: bool = False
    device: str | None = None

    @property
    def batch_size(self) -> int:
        """Completions per step: generations per prompt times prompts per step."""
        return self.num_generations * self.prompts_per_step
