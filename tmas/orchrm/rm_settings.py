"""The settings of a plan reward model training, saved beside it so that a rerun resumes only
the same training (more epochs continue it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_LEARNING_RATE = 1e-3
"""LoRA plus a fresh score head: 1e-3 learnt a plan rule in 8 steps where 3e-4 had not moved
(``tests/orchrm/test_orchrm_model.py``)."""


class RewardModelSettings(BaseModel):
    """What ``tmas orchrm train`` trains: pairs, base model, LoRA and Bradley-Terry settings.

    Example:
        >>> RewardModelSettings(pairs="/p.jsonl").eval_fraction
        0.2
    """

    model_config = ConfigDict(extra="forbid")

    pairs: str
    eval_pairs: str | None = Field(
        default=None, description="held-out pairs (default: a share of the problems)"
    )
    eval_fraction: float = Field(
        default=0.2, ge=0, lt=1, description="share of the problems held out (no eval_pairs)"
    )
    model: str = "smollm2"
    epochs: int = Field(default=3, ge=1)
    batch_size: int = Field(default=8, ge=1, description="pairs per step")
    learning_rate: float = Field(default=DEFAULT_LEARNING_RATE, gt=0)
    lora_r: int = Field(default=16, ge=1)
    lora_alpha: int = Field(default=32, ge=1)
    lora_dropout: float = Field(default=0.0, ge=0, lt=1)
    max_length: int = Field(default=1024, ge=64, description="tokens of problem plus plan")
    seed: int = 0
    save_every: int = Field(default=10, ge=1, description="steps between checkpoints")
    device: str | None = None
