"""Run configuration: sizes, exploration rate, budgets and per-role model settings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tmas.roles import Role, RoleBook


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
    adapter: str | None = Field(
        default=None,
        description="hf backend: this role's own LoRA adapter folder ('none': the base weights)",
    )


EXECUTION_SETTINGS = frozenset(
    {
        "max_retries",
        "retry_initial_interval",
        "retry_backoff_factor",
        "retry_max_interval",
        "retry_jitter",
        "history_window",
        "durability",
    }
)
"""Config fields that change how a run copes with faults, how much state it keeps and when it
saves it, not what its model calls answer."""


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
    dedup_threshold: float = Field(
        default=0.6,
        gt=0.0,
        le=1.0,
        description="the score of `similarity` from which two items (or DeLM notes) stating "
        "the same numbers are duplicates",
    )
    similarity: str = Field(
        default="jaccard",
        description="the registered similarity that deduplicates both banks, the lifelong "
        "memory and DeLM's notes, and picks the experiences a prompt shows (jaccard, bm25 or a "
        "plugin's; docs/memory.md)",
    )
    memory_similarity: str = Field(
        default="bm25",
        description="the registered similarity that ranks lifelong-memory items for a new "
        "problem (items scoring 0 are left out)",
    )
    round_widths: list[int] | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="candidates of each iteration in turn (e.g. PaCoRe's [32, 4, 1]); sets "
        "max_iterations to its length and overrides n_candidates",
    )
    rollout_chars_in_prompt: int = Field(
        default=2000,
        ge=100,
        description="characters of an earlier rollout (its end) that a repair (exploit, "
        "refine), an aggregation (RSA) or a reflection prompt shows",
    )
    reference_chars: int = Field(
        default=700,
        ge=50,
        description="characters of each previous-round solution (its end) that a PaCoRe "
        "reference prompt shows",
    )
    report_chars_in_prompt: int = Field(
        default=800,
        ge=50,
        description="characters of each verification report (its end) that a summary or "
        "refinement prompt shows",
    )
    selection: str | None = Field(
        default=None,
        description="the rule that picks the final answer (a registered selection rule, e.g. "
        "vote_all, vote_last, majority_last, best_scored_last); None: the topology's own",
    )
    history_window: int = Field(
        default=5,
        ge=1,
        le=100_000,
        description="iteration records kept in the state (every record stays in the checkpoints)",
    )
    durability: Literal["sync", "async", "exit"] = Field(
        default="sync",
        description="when checkpoints are written (LangGraph's durability): sync, before the "
        "next step starts (a killed run repeats no finished call); async, while it runs "
        "(cheaper; a kill may lose the last step's calls); exit, only when the run stops",
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
    proof: bool = Field(
        default=False,
        description="proof problems: no answer to vote on; proof prompts, the best-verified "
        "candidate is the result, a rubric judge grades it against a reference (docs/proofs.md)",
    )
    memory: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
        description="a lifelong memory namespace: items from earlier problems seed the banks, "
        "and this run's well-verified items are kept there (docs/memory.md)",
    )
    memory_items: int = Field(
        default=6, ge=0, le=100, description="items of each kind retrieved from the memory"
    )
    memory_min_score: float = Field(
        default=0.75,
        ge=0.0,
        le=1.0,
        description="the verification score a rollout needs for its items to enter the memory",
    )
    memory_types: list[Literal["conclusion", "pitfall", "note", "strategy"]] = Field(
        default_factory=lambda: ["pitfall", "strategy"],
        description="the item types a memory keeps: pitfalls and strategies carry over to "
        "other problems; conclusions and notes state facts of their own problem",
    )
    memory_cap: int = Field(
        default=500, ge=1, le=100_000, description="items a memory namespace keeps at most"
    )
    roles: dict[Role, RoleModel] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _older_names_and_rounds(cls, data: Any) -> Any:
        """Accept ``vote_scope`` (older runs and commands: ``last`` is ``selection=vote_last``)
        and make ``max_iterations`` follow ``round_widths``."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        scope = data.pop("vote_scope", None)
        if scope not in (None, "all", "last"):
            raise ValueError(f"vote_scope must be 'all' or 'last', not {scope!r}")
        if scope == "last" and data.get("selection") is None:
            data["selection"] = "vote_last"
        widths = data.get("round_widths")
        if isinstance(widths, list) and widths:
            rounds = data.setdefault("max_iterations", len(widths))
            if rounds != len(widths):
                raise ValueError(
                    f"round_widths lists {len(widths)} rounds but max_iterations is {rounds}"
                )
        return data

    @model_validator(mode="after")
    def _round_widths_in_range(self) -> TMASConfig:
        for width in self.round_widths or []:
            if not 1 <= width <= 256:
                raise ValueError(f"round_widths: each width must be 1..256, not {width}")
        return self

    @model_validator(mode="after")
    def _solver_has_no_override(self) -> TMASConfig:
        if "solver" in self.roles:
            raise ValueError("the solver uses the main model; set it with --model/--base-url")
        return self

    def calls_per_iteration(self) -> int:
        """LLM calls of one TMAS iteration at width N: N solve, N*M verify, N each summary,
        experience and guideline."""
        n, m = self.n_candidates, self.n_verifications
        return n + n * m + 3 * n

    def width(self, iteration: int) -> int:
        """Candidates of ``iteration`` (1-based): its entry of ``round_widths``, else N.

        Example:
            >>> TMASConfig(round_widths=[6, 6, 1]).width(3), TMASConfig(n_candidates=5).width(2)
            (1, 5)
        """
        if self.round_widths:
            return self.round_widths[min(iteration, len(self.round_widths)) - 1]
        return self.n_candidates

    def widest(self) -> int:
        """The most candidates any iteration has.

        Example:
            >>> TMASConfig(n_candidates=2, round_widths=[8, 4, 1]).widest()
            8
        """
        return max(self.round_widths) if self.round_widths else self.n_candidates

    def max_tokens_for(self, role: Role, roles: RoleBook | None = None) -> int:
        """Answer-length limit of ``role``: its override in ``roles``, else its
        ``<role>_max_tokens`` field (built-in roles), else its declared budget in the run's
        role book (default: the roles registered in this process).

        Example:
            >>> TMASConfig(verifier_max_tokens=99).max_tokens_for("verifier")
            99
            >>> book = RoleBook.registered().declaring({"scout": {"max_tokens": 40}})
            >>> TMASConfig().max_tokens_for("scout", book)
            40
        """
        override = self.roles.get(role)
        if override is not None and override.max_tokens is not None:
            return override.max_tokens
        field = f"{role}_max_tokens"
        if field in type(self).model_fields:
            return getattr(self, field)
        return (roles or RoleBook.registered())[role].max_tokens

    def check_roles(self, roles: RoleBook | None = None) -> TMASConfig:
        """This config, or ConfigError when ``roles`` names a role the run's role book does
        not know (declare roles before: a plugin or the topology's ``roles:`` block).

        Example:
            >>> TMASConfig(roles={"no_such_role": RoleModel(model="m")}).check_roles()
            Traceback (most recent call last):
            ...
            tmas.config.ConfigError: unknown role 'no_such_role' in the role settings; known: ...
        """
        book = roles or RoleBook.registered()
        if unknown := book.unknown(self.roles):
            raise ConfigError(
                f"unknown role {unknown[0]!r} in the role settings; known: {', '.join(book)}"
            )
        return self


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


def merged_roles(*layers: Any) -> dict[str, dict[str, Any]]:
    """Per-role settings of several layers merged field by field, later layers winning (so
    ``--role-model verifier=M`` and ``--set roles={"verifier": {"max_tokens": 64}}`` both
    hold).

    Example:
        >>> merged_roles({"verifier": RoleModel(model="m")}, {"verifier": {"max_tokens": 64}})
        {'verifier': {'model': 'm', 'max_tokens': 64}}
    """
    merged: dict[str, dict[str, Any]] = {}
    for layer in layers:
        for role, settings in (layer or {}).items():
            values = (
                settings.model_dump(exclude_none=True)
                if isinstance(settings, RoleModel)
                else dict(settings)
            )
            merged[role] = {**merged.get(role, {}), **values}
    return merged


def merged_config(base: dict[str, Any], changes: dict[str, Any]) -> TMASConfig:
    """``base`` settings with ``changes`` applied, as a checked config (ConfigError naming each
    bad field). Round widths among the changes set the number of iterations unless the
    changes set it too; per-role settings merge field by field (:func:`merged_roles`).

    Example:
        >>> merged_config({"max_iterations": 1}, {"round_widths": [4, 2]}).max_iterations
        2
        >>> merged_config({"round_widths": [4, 2, 1]}, {"max_iterations": 5})
        Traceback (most recent call last):
        ...
        tmas.config.ConfigError: invalid configuration: ... lists 3 rounds but max_iterations is 5
    """
    values = dict(base)
    if "round_widths" in changes and "max_iterations" not in changes:
        values.pop("max_iterations", None)
    changes = dict(changes)
    if _role_layers(values.get("roles"), changes.get("roles")):
        changes["roles"] = merged_roles(values.get("roles"), changes["roles"])
    return load_config(**{**values, **changes})


def _role_layers(*layers: Any) -> bool:
    """Whether role settings of two layers are to be merged: both given, both mappings of
    mappings (anything else is left for validation to name)."""
    return all(
        isinstance(layer, dict) and all(isinstance(v, dict | RoleModel) for v in layer.values())
        for layer in layers
    ) and all(layers)
