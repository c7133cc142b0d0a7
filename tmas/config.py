"""Run configuration: sizes, exploration rate, budgets and per-role model settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tmas.roles import Role


class ConfigError(ValueError):
    """A configuration value was rejected; the message names each bad field."""


class RoleModel(BaseModel):
    """Model settings for one role; unset fields fall back to the run's main model.

    Example:
        >>> RoleModel(model="Qwen/Qwen3-4B", max_tokens=1024).max_tokens
        1024
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    model: str | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1, le=262_144)


class TMASConfig(BaseModel):
    """Everything that shapes one TMAS run (stored with the run, so resume rebuilds it).

    Example:
        >>> cfg = TMASConfig(n_candidates=4, n_verifications=2, max_iterations=3)
        >>> cfg.calls_per_iteration()
        24
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_candidates: int = Field(default=4, ge=1, le=256, description="N solutions per iteration")
    n_verifications: int = Field(default=2, ge=1, le=64, description="M checks per candidate")
    max_iterations: int = Field(default=3, ge=1, le=1000)
    epsilon: float = Field(default=0.2, ge=0.0, le=1.0, description="exploration probability")
    seed: int = 0
    solver_max_tokens: int = Field(default=512, ge=16, le=262_144)
    verifier_max_tokens: int = Field(default=256, ge=16, le=262_144)
    summary_max_tokens: int = Field(default=128, ge=16, le=262_144)
    experience_max_tokens: int = Field(default=160, ge=16, le=262_144)
    guideline_max_tokens: int = Field(default=64, ge=16, le=262_144)
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    experience_cap: int = Field(default=32, ge=1, le=10_000)
    guideline_cap: int = Field(default=16, ge=1, le=10_000)
    experiences_per_prompt: int = Field(default=6, ge=0, le=1000)
    dedup_threshold: float = Field(default=0.6, gt=0.0, le=1.0, description="Jaccard cut-off")
    rollout_chars_in_prompt: int = Field(default=2000, ge=100, description="parent rollout cap")
    vote_scope: Literal["last", "all"] = "all"
    history_window: int = Field(
        default=5,
        ge=1,
        le=100_000,
        description="iteration records kept in the state (every record stays in the checkpoints)",
    )
    stop_on_consensus: bool = Field(
        default=False, description="stop early when every candidate agrees and checks pass"
    )
    max_retries: int = Field(
        default=2,
        ge=0,
        le=20,
        description="retries of a transient failure (connection errors, timeouts, HTTP 429/5xx)",
    )
    retry_initial_interval: float = Field(
        default=0.5, gt=0.0, le=600.0, description="seconds before the first retry"
    )
    retry_backoff_factor: float = Field(
        default=2.0, ge=1.0, le=10.0, description="growth of the wait after each retry"
    )
    retry_max_interval: float = Field(
        default=30.0, gt=0.0, le=3600.0, description="the longest wait between retries"
    )
    retry_jitter: bool = Field(
        default=True, description="add a random wait of up to 1 s to each retry"
    )
    roles: dict[Role, RoleModel] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _solver_has_no_override(self) -> TMASConfig:
        if "solver" in self.roles:
            raise ValueError("the solver uses the main model; set it with --model/--base-url")
        return self

    def calls_per_iteration(self) -> int:
        """LLM calls of one iteration: N solve, N*M verify, N each summary/experience/guideline."""
        n, m = self.n_candidates, self.n_verifications
        return n + n * m + 3 * n

    def max_tokens_for(self, role: Role) -> int:
        """Answer-length limit of ``role``, a per-role override winning."""
        override = self.roles.get(role)
        if override is not None and override.max_tokens is not None:
            return override.max_tokens
        return getattr(self, f"{role}_max_tokens")


def describe_validation_error(exc: ValidationError) -> str:
    """One line naming each rejected field.

    Example:
        >>> try:
        ...     RoleModel(temperature=9)
        ... except ValidationError as exc:
        ...     print(describe_validation_error(exc))
        temperature: Input should be less than or equal to 2
    """
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}" for err in exc.errors()
    )


def load_config(**values: object) -> TMASConfig:
    """Build a config, turning pydantic's errors into one readable ConfigError.

    Example:
        >>> load_config(epsilon=2.0)
        Traceback (most recent call last):
        ...
        tmas.config.ConfigError: invalid configuration: epsilon: Input should be ...
    """
    try:
        return TMASConfig(**values)
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration: {describe_validation_error(exc)}") from None
