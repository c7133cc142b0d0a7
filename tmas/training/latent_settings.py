"""The settings of a DiffMAS training (``tmas train latent``), saved beside its output so that a
rerun resumes only the same training (more steps continue it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class LatentSFTSettings(BaseModel):
    """What ``tmas train latent`` trains: data, topology, base model, LoRA and SFT settings.

    Example:
        >>> LatentSFTSettings(data="gsm8k").graph
        'latent_mas'
    """

    model_config = ConfigDict(extra="forbid")

    data: str = Field(
        description="problems with answers (JSONL, a bundled sample) or rows exported from runs"
    )
    limit: int | None = Field(default=None, ge=1, description="first N problems")
    graph: str = Field(
        default="latent_mas", description="the chain topology (latent or text) the adapter serves"
    )
    model: str = "smollm2"
    steps: int = Field(default=20, ge=1)
    batch_size: int = Field(default=2, ge=1, description="problems per step")
    learning_rate: float = Field(default=2e-4, gt=0)
    lora_r: int = Field(default=8, ge=1)
    lora_alpha: int = Field(default=16, ge=1)
    lora_dropout: float = Field(default=0.0, ge=0, lt=1)
    max_target_tokens: int = Field(default=256, ge=1, description="longest target kept whole")
    notes_max_tokens: int | None = Field(
        default=None,
        ge=1,
        description="text chains: longest note of each upstream agent (default: its role's)",
    )
    seed: int = 0
    save_every: int = Field(default=5, ge=1, description="steps between checkpoints")
    device: str | None = None
