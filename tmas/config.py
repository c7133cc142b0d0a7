"""Run configuration: sizes, exploration rate, budgets and per-role model settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tmas.roles import BUILTIN_ROLES, Role, RoleBook


class ConfigError(ValueError):
    """A configuration value was rejected; the message names each bad field."""


class RoleModel(BaseModel):
    """Settings of one role's model calls; unset fields fall back to those of the role whose
    model it borrows, then to the run's (main model, temperature) and the role's declared
    budget. The solver's own model is the main one: it takes a budget and a temperature here.

    Example:
        >>> RoleModel(model="Qwen/Qwen3-4B", max_tokens=1024).max_tokens
        1024
    """

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    model: str | None = Field(default=None, description="the model id this role's calls use")
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
        and the flat budget spellings (:data:`BUDGET_SPELLINGS`), and make ``max_iterations``
        follow ``round_widths``."""
        if not isinstance(data, dict):
            return data
        data = with_budgets_in_roles(data)
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
    def _solver_plays_the_main_model(self) -> TMASConfig:
        solver = self.roles.get("solver")
        if solver is not None and (solver.model, solver.base_url, solver.adapter) != (None,) * 3:
            raise ValueError(
                "the solver uses the main model; set it with --model/--base-url (its roles "
                "entry takes max_tokens and temperature)"
            )
        return self

    @classmethod
    def accepts(cls, key: str) -> bool:
        """Whether ``key`` is a setting (a field, a flat budget spelling or ``vote_scope``).

        Example:
            >>> TMASConfig.accepts("verifier_max_tokens"), TMASConfig.accepts("colour")
            (True, False)
        """
        return key in cls.model_fields or key in BUDGET_SPELLINGS or key == "vote_scope"

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


BUDGET_SPELLINGS: dict[str, Role] = {f"{role}_max_tokens": role for role in BUILTIN_ROLES}
"""The flat spelling of a built-in role's answer budget (``--set verifier_max_tokens=64``, older
saved runs): each is ``roles.<role>.max_tokens``."""


def with_budgets_in_roles(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with each flat budget spelling moved into its role's entry of ``roles``
    (where that entry gives no budget of its own); anything malformed is left for
    validation to name.

    Example:
        >>> with_budgets_in_roles({"verifier_max_tokens": 64, "roles": {"verifier":
        ...                        {"model": "judge"}}})
        {'roles': {'verifier': {'model': 'judge', 'max_tokens': 64}}}
    """
    values = dict(values)
    flat = {key: values.pop(key) for key in BUDGET_SPELLINGS if key in values}
    if not flat:
        return values
    roles = values.get("roles") or {}
    if not isinstance(roles, Mapping):
        return {**values, **flat}
    merged = {role: role_values(entry) for role, entry in roles.items()}
    for key, budget in flat.items():
        entry = merged.setdefault(BUDGET_SPELLINGS[key], {})
        if isinstance(entry, dict):
            entry.setdefault("max_tokens", budget)
    return {**values, "roles": merged}


def role_values(entry: Any) -> Any:
    """One role's settings as a plain dict (unset fields left out), or as it is when it is
    neither a ``RoleModel`` nor a mapping.

    Example:
        >>> role_values(RoleModel(model="judge"))
        {'model': 'judge'}
    """
    if isinstance(entry, RoleModel):
        return entry.model_dump(exclude_none=True)
    return dict(entry) if isinstance(entry, Mapping) else entry
