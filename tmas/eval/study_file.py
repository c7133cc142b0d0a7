"""The study file: a comparison's whole design in one YAML document (problems and their
deduplication, conditions, seeds, the reference, the engine every condition shares, the
self-consistency control, the pilot and the effect the study should be able to tell). Paths in
it are relative to the file. See ``docs/evaluation.md`` for the format.

Example:
    >>> study = parse_study({"name": "s", "reference": "tmas",
    ...                      "conditions": {"tmas": {"graph": "tmas"}}})
    >>> study.self_consistency.graph, study.seeds, study.tolerance
    ('majority_vote', [0], 0.1)
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

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
            >>> study = parse_study({"name": "s", "reference": "a", "seeds": [0, 1, 2],
            ...     "conditions": {"a": {}, "b": {"seeds": [2, 0]}}})
            >>> study.seeds_of("a"), study.seeds_of("b"), study.seeds_of("self_consistency")
            ([0, 1, 2], [0, 2], [0, 1, 2])
        """
        chosen = self.conditions[name].seeds if name in self.conditions else None
        return [s for s in self.seeds if chosen is None or s in chosen]

    def all_conditions(self) -> dict[str, Condition]:
        """The declared conditions and the added self-consistency control, reference first.

        Example:
            >>> study = parse_study({"name": "s", "reference": "b", "conditions": {
            ...     "a": {"graph": "rsa"}, "b": {}}})
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


def with_overrides(document: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``document`` with dotted keys set (``problems.limit``, ``conditions.tmas.settings.x``).

    Example:
        >>> with_overrides({"a": {"b": 1}}, {"a.c": 2, "d": 3})
        {'a': {'b': 1, 'c': 2}, 'd': 3}
    """
    if not isinstance(overrides, dict) or not all(isinstance(k, str) for k in overrides):
        raise StudyError("overrides (toy:, --set) are a mapping of dotted keys to values")
    result = copy.deepcopy(document)
    for dotted, value in overrides.items():
        keys, place = dotted.split("."), result
        for key in keys[:-1]:
            if not isinstance(place.get(key, {}), dict):
                raise StudyError(f"{dotted}: {key} is not a section of the study")
            place = place.setdefault(key, {})
        place[keys[-1]] = value
    return result


def parse_study(
    document: dict[str, Any], base_dir: Path = Path(), overrides: dict[str, Any] | None = None
) -> StudyFile:
    """A study from its parsed document, with dotted ``overrides`` applied; StudyError naming
    every problem."""
    if not isinstance(document, dict):
        raise StudyError("a study file is a mapping (name, reference, conditions, ...)")
    try:
        return StudyFile(**with_overrides(document, overrides or {}), base_dir=base_dir)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'study'}: {e['msg']}" for e in exc.errors()
        )
        raise StudyError(f"not a study: {problems}") from None


def only_conditions(document: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """``document`` keeping the conditions ``names`` and the contrasts between them (a subset
    of a study run in its own folder; the full file, rerun there, keeps their runs).

    Example:
        >>> kept = only_conditions({"reference": "a", "conditions": {"a": {}, "b": {}, "c": {}},
        ...                         "contrasts": [["b", "c"], ["a", "b"]]}, ["a", "b"])
        >>> list(kept["conditions"]), kept["contrasts"]
        (['a', 'b'], [['a', 'b']])
    """
    conditions = document.get("conditions")
    if not isinstance(conditions, dict):
        raise StudyError("the study has no conditions: section to choose from")
    known = ", ".join(map(str, conditions))
    unknown = [name for name in names if name not in conditions]
    if unknown or not names:
        raise StudyError(f"--only {', '.join(unknown)}: name conditions of the study ({known})")
    if document.get("reference") not in names:
        raise StudyError(
            f"--only leaves out the reference {document.get('reference')!r}, which every other "
            "condition is compared with: name it too, or choose another with --set reference=NAME"
        )
    for name in names:
        start = ((conditions[name] or {}).get("train") or {}).get("warm_start")
        if start is not None and start not in names:
            raise StudyError(f"--only: {name} trains from {start}'s adapter: name {start} too")
    kept = {*names, SELF_CONSISTENCY}
    result = copy.deepcopy(document)
    result["conditions"] = {name: conditions[name] for name in conditions if name in names}
    result["contrasts"] = [
        pair for pair in document.get("contrasts") or [] if set(map(str, pair)) <= kept
    ]
    return result


def load_study(
    path: Path,
    overrides: dict[str, Any] | None = None,
    *,
    toy: bool = False,
    only: list[str] | None = None,
) -> StudyFile:
    """Read a study file; with ``toy`` its ``toy:`` overrides apply first, then ``overrides``,
    then ``only`` keeps those conditions (:func:`only_conditions`).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = Path(folder) / "s.yaml"
        ...     _ = path.write_text("name: s\\nreference: a\\nconditions: {a: {}}\\n"
        ...                         "toy: {problems.limit: 2}\\n")
        ...     load_study(path, toy=True).problems.limit
        2
    """
    try:
        document = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise StudyError(f"cannot read study file {path}: {exc}") from None
    if toy:
        if not isinstance(document, dict) or not document.get("toy"):
            raise StudyError(f"{path} has no toy: section for --toy")
        document = with_overrides(document, document["toy"])
    if only is not None and isinstance(document, dict):
        document = only_conditions(with_overrides(document, overrides or {}), only)
        overrides = None
    return parse_study(document, Path(path).resolve().parent, overrides)
