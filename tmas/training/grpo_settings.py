"""The settings of a GRPO training run, saved beside its output so that a rerun resumes only
the same training."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tmas.training.rewards import RewardWeights


class JudgeSettings(BaseModel):
    """The novelty judge: a backend of the framework (default: the hf backend on the base
    model being trained), or none (novelty is then not scored)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    backend: str = "hf"
    model: str | None = None
    base_url: str | None = None
    prompt_file: str | None = None
    max_tokens: int = Field(default=64, ge=16)


class GRPOSettings(BaseModel):
    """What ``tmas train grpo`` trains: data, base model, LoRA, GRPO and reward settings.

    Example:
        >>> GRPOSettings(data="/d.parquet").batch_size
        4
    """

    model_config = ConfigDict(extra="forbid")

    data: str
    model: str = "smollm2"
    steps: int = Field(default=50, ge=1)
    num_generations: int = Field(default=4, ge=2)
    prompts_per_step: int = Field(default=1, ge=1)
    max_completion_length: int = Field(default=128, ge=1)
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
