"""The study file: a comparison's whole design in one YAML document (problems and their
deduplication, conditions, seeds, the reference, the engine every condition shares, the
self-consistency control, the pilot and the effect the study should be able to tell). Paths in
it are relative to the file. See ``docs/evaluation.md`` for the format; reading a file, with
its overrides, is :mod:`tmas.eval.study_loading`.

Example:
    >>> study = StudyFile(name="s", reference="tmas", conditions={"tmas": {"graph": "tmas"}})
    >>> study.self_consistency.graph, study.seeds, study.tolerance
    ('majority_vote', [0], 0.1)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tmas.eval.data import SAMPLES

SELF_CONSISTENCY = "self_consistency"


class StudyError(ValueError):
    """A study file that cannot be read or does not describe a study."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProblemSet(_Strict):
    """Which problems, in which order, without which copies."""

    data: str = Field("gsm8k", description="a data file or a bundled sample name")
    limit: int | None = Field(None, ge=1, description="problems kept (after deduplication)")
    shuffle_seed: int | None = Field(None, description="shuffle before the limit; None: keep order")
    dedupe_against: list[str] = Field(
        default_factory=list, description="training files whose copies are left out"
    )
    near_overlap: float = Field(0.7, gt=0, le=1, description="word overlap of a near copy")
    proof: bool = False


class WidthMatch(_Strict):
    """A width chosen so the condition's mean tokens per problem match the reference's:
    ``setting`` is ``n_candidates`` or ``round_widths`` (then ``shape`` says where the width
    goes, e.g. ``[w, w, 1]``). Tokens are modelled as ``a*w + b*w^2`` (fan-outs grow with the
    width, answers read by every member of the next round with its square), fitted on pilot
    runs at ``pilot_widths`` (one width: linear only)."""

    setting: Literal["n_candidates", "round_widths"] = "n_candidates"
    shape: list[int | Literal["w"]] = Field(default_factory=lambda: ["w"])
    pilot_widths: list[int] = Field(default_factory=lambda: [4])
    max_width: int = Field(64, ge=1, le=256)

    @field_validator("shape")
    @classmethod
    def _shape(cls, value: list[int | str]) -> list[int | str]:
        if "w" not in value or any(part != "w" and part < 1 for part in value):
            raise ValueError("shape: rounds as widths of at least 1, with w where the width goes")
        return value

    @field_validator("pilot_widths")
    @classmethod
    def _widths(cls, value: list[int]) -> list[int]:
        if not 1 <= len(set(value)) <= 2 or min(value) < 1:
            raise ValueError("pilot_widths: one or two different widths, each at least 1")
        return sorted(set(value))

    def settings(self, width: int) -> dict[str, Any]:
        """The settings of this width.

        Example:
            >>> WidthMatch(setting="round_widths", shape=["w", "w", 1]).settings(3)
            {'round_widths': [3, 3, 1], 'max_iterations': 3}
            >>> WidthMatch().settings(5)
            {'n_candidates': 5}
        """
        if self.setting == "n_candidates":
            return {"n_candidates": width}
        widths = [width if part == "w" else part for part in self.shape]
        return {"round_widths": widths, "max_iterations": len(widths)}


class Training(_Strict):
    """Train, then evaluate: before a condition's arm at seed S is evaluated, a LoRA adapter is
    trained at seed S (``grpo``, ``sft`` or ``latent``: the settings of ``tmas train KIND``,
    paths relative to the study file; the seed and output folder are the study's), and the
    arm's calls use it: every role's, or only those of ``roles``. ``warm_start`` names another
    training condition whose adapter (at the same seed) this one continues. The training
    data's problems are left out of the study's problems."""

    kind: Literal["grpo", "sft", "latent"]
    settings: dict[str, Any] = Field(default_factory=dict, validate_default=True)
    roles: list[str] = Field(default_factory=list, description="roles given the adapter")
    warm_start: str | None = None

    @field_validator("settings")
    @classmethod
    def _study_owned(cls, value: dict[str, Any]) -> dict[str, Any]:
        owned = sorted({"seed", "init_adapter"} & set(value))
        if owned:
            raise ValueError(
                f"{', '.join(owned)}: the study sets these (seeds: [...], warm_start: CONDITION)"
            )
        if "data" not in value:
            raise ValueError("data: name the training rows or problems")
        return value


class Condition(_Strict):
    """One arm of the study: a topology with its settings, role models, prompts and plugins
    (resolved to a run plan exactly as ``tmas eval`` resolves its options), trained first when
    it has ``train``."""

    graph: str = "tmas"
    settings: dict[str, Any] = Field(default_factory=dict)
    roles: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="per role: model, base_url, adapter, max_tokens, ..."
    )
    prompts: list[str] | dict[str, str] = Field(default_factory=list)
    plugins: list[str] = Field(default_factory=list)
    match_tokens: WidthMatch | None = None
    train: Training | None = None
    seeds: list[int] | None = Field(
        None, description="a subset of the study's seeds (an expensive arm); None: all"
    )
    memory_import: str | None = Field(
        None, description="memory items (tmas memory export) each arm's memory starts with"
    )


class SelfConsistency(_Strict):
    """The self-consistency control added to every study unless ``self_consistency: false``:
    majority vote over independent samples, its sample count matched to the reference's
    tokens."""

    graph: str = "majority_vote"
    settings: dict[str, Any] = Field(default_factory=dict)
    pilot_width: int = Field(4, ge=1, le=256)
    max_width: int = Field(64, ge=1, le=256)

    def condition(self) -> Condition:
        """The condition it adds.

        Example:
            >>> SelfConsistency(pilot_width=2).condition().match_tokens.pilot_widths
            [2]
        """
        return Condition(
            graph=self.graph,
            settings=self.settings,
            match_tokens=WidthMatch(pilot_widths=[self.pilot_width], max_width=self.max_width),
        )


class Pilot(_Strict):
    """The small first run that sizes a study: ``problems`` per condition (the study's first
    problems, first seed; their runs are the study's own, so none is spent twice)."""

    problems: int = Field(3, ge=1)


class StudyFile(_Strict):
    """A study, as its file says."""

    name: str
    description: str = ""
    problems: ProblemSet = Field(default_factory=ProblemSet)
    backend: dict[str, Any] = Field(default_factory=dict, description="the engine, shared")
    concurrency: int = Field(1, ge=1, description="problems at once, across conditions")
    max_concurrency: int | None = Field(None, ge=1, description="model calls at once per run")
    seeds: list[int] = Field(default_factory=lambda: [0])
    reference: str
    conditions: dict[str, Condition]
    self_consistency: SelfConsistency | None = Field(default_factory=SelfConsistency)
    contrasts: list[tuple[str, str]] = Field(
        default_factory=list,
        description="paired differences to report besides each one against the reference: "
        "[baseline, treated] condition names",
    )
    tolerance: float = Field(0.10, gt=0, lt=1, description="allowed token mismatch when matched")
    effect: float | None = Field(
        0.10, gt=0, le=1, description="the smallest accuracy difference the study should tell"
    )
    pilot: Pilot = Field(default_factory=Pilot)
    toy: dict[str, Any] = Field(default_factory=dict, description="overrides of --toy")
    base_dir: Path = Field(Path(), exclude=True)

    @field_validator("self_consistency", mode="before")
    @classmethod
    def _off(cls, value: Any) -> Any:
        return None if value is False else value

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, value: list[int]) -> list[int]:
        if not value or len(set(value)) != len(value):
            raise ValueError("seeds: a non-empty list without repeats")
        return value

    @model_validator(mode="after")
    def _names(self) -> StudyFile:
        if not self.conditions:
            raise ValueError("conditions: name at least one")
        if self.reference not in self.conditions:
            raise ValueError(
                f"reference {self.reference!r} is not one of the conditions "
                f"({', '.join(self.conditions)})"
            )
        if self.self_consistency is not None and SELF_CONSISTENCY in self.conditions:
            raise ValueError(
                f"a condition is named {SELF_CONSISTENCY!r}: rename it, or set "
                "self_consistency: false to leave the added control out"
            )
        if self.conditions[self.reference].match_tokens is not None:
            raise ValueError("the reference sets the token budget: it cannot match_tokens")
        for name, condition in self.conditions.items():
            self._warm_starts(name)
            remembers = bool(condition.settings.get("memory"))
            if condition.memory_import is not None and not remembers:
                raise ValueError(f"condition {name}: memory_import needs a memory: setting")
            if remembers and self.concurrency != 1:
                raise ValueError(
                    f"condition {name} remembers across problems: run the study with "
                    "concurrency: 1 (every condition then sees the problems in the same order)"
                )
            if condition.seeds is not None and (
                not condition.seeds
                or not set(condition.seeds) <= set(self.seeds)
                or name == self.reference
            ):
                raise ValueError(
                    f"condition {name}: seeds: a non-empty subset of the study's {self.seeds} "
                    "(the reference runs them all)"
                )
        self._contrasts()
        bad = [n for n in self.conditions if not n.replace("-", "").replace("_", "").isalnum()]
        if bad:
            raise ValueError(
                f"condition names are folder names: letters, digits, - and _ "
                f"only ({', '.join(bad)})"
            )
        return self

    def _contrasts(self) -> None:
        known = [*self.conditions, *([SELF_CONSISTENCY] if self.self_consistency else [])]
        for baseline, treated in self.contrasts:
            if baseline == treated or not {baseline, treated} <= set(known):
                raise ValueError(
                    f"contrast [{baseline}, {treated}]: two different conditions of "
                    f"{', '.join(known)}"
                )
            if not set(self.seeds_of(baseline)) & set(self.seeds_of(treated)):
                raise ValueError(f"contrast [{baseline}, {treated}]: the two share no seed")

    def _warm_starts(self, name: str) -> list[str]:
        chain, condition = [name], self.conditions[name]
        while condition.train is not None and condition.train.warm_start is not None:
            start = condition.train.warm_start
            condition = self.conditions.get(start) or Condition()
            if start in chain or condition.train is None:
                raise ValueError(
                    f"condition {chain[-1]}: warm_start {start!r} is not another training "
                    f"condition{' (a circle)' if start in chain else ''}"
                )
            chain.append(start)
        return chain

    def seeds_of(self, name: str) -> list[int]:
        """The seeds condition ``name`` runs at, in the study's order.

        Example:
            >>> study = StudyFile(name="s", reference="a", seeds=[0, 1, 2],
            ...     conditions={"a": {}, "b": {"seeds": [2, 0]}})
            >>> study.seeds_of("a"), study.seeds_of("b"), study.seeds_of("self_consistency")
            ([0, 1, 2], [0, 2], [0, 1, 2])
        """
        chosen = self.conditions[name].seeds if name in self.conditions else None
        return [s for s in self.seeds if chosen is None or s in chosen]

    def all_conditions(self) -> dict[str, Condition]:
        """The declared conditions and the added self-consistency control, reference first.

        Example:
            >>> study = StudyFile(name="s", reference="b",
            ...     conditions={"a": {"graph": "rsa"}, "b": {}})
            >>> list(study.all_conditions())
            ['b', 'a', 'self_consistency']
        """
        named = {self.reference: self.conditions[self.reference], **self.conditions}
        if self.self_consistency is not None:
            named[SELF_CONSISTENCY] = self.self_consistency.condition()
        return named

    def path(self, value: str) -> str:
        """A path of the file, relative to the file's folder (bundled sample names as they
        are)."""
        if value in SAMPLES or Path(value).is_absolute():
            return value
        return str((self.base_dir / value).resolve())
