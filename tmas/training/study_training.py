"""Studies whose conditions train, then evaluate: each training condition at seed S trains its
LoRA adapter at seed S under ``OUT/training/NAME/seed-S`` (the LoRA initialisation and the
data order follow the seed, so k seeds are k trainings), and the arm at seed S evaluates with
it. A finished training is kept; an interrupted one resumes from its last checkpoint. The
training data's problems are left out of the study's problems (exact, normalised and near
copies; for generated problems the same kind with the same numbers).

Example (Python; ``tmas study STUDY.yaml --out DIR`` does the same)::

    from tmas.training.study_training import TrainingStudy
    study = TrainingStudy(load_study(Path("benchmarks/studies/hybrid_grpo.yaml")), Path("out"))
    report = report_study(study)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from tmas.config import describe_validation_error
from tmas.eval.data import Problem, load_problems
from tmas.eval.study import Study
from tmas.eval.study_file import StudyError, Training
from tmas.llm.backend import LOCAL_KINDS
from tmas.training.data_files import read_rows
from tmas.training.latent_data import is_export
from tmas.training.trainer_runs import SETTINGS_FILE, same_training

TrainingLog = Callable[[str], None]


def settings_class(kind: str) -> type[BaseModel]:
    """The settings model of a training kind.

    Example:
        >>> settings_class("sft").__name__
        'SFTSettings'
    """
    if kind == "grpo":
        from tmas.training.grpo_settings import GRPOSettings

        return GRPOSettings
    if kind == "sft":
        from tmas.training.rejection_sft import SFTSettings

        return SFTSettings
    from tmas.training.latent_settings import LatentSFTSettings

    return LatentSFTSettings


def run_training(kind: str, settings: BaseModel, out_dir: Path) -> dict[str, Any]:
    """Train (or resume) with the trainer of ``kind``; its finished record."""
    if kind == "grpo":
        from tmas.training.grpo import train_grpo

        return train_grpo(settings, out_dir, progress=False)  # type: ignore[arg-type]
    if kind == "sft":
        from tmas.training.rejection_sft import train_sft

        return train_sft(settings, out_dir, progress=False)  # type: ignore[arg-type]
    from tmas.training.latent_sft import train_latent

    return train_latent(settings, out_dir, progress=False)  # type: ignore[arg-type]


def data_problems(source: str) -> list[Problem]:
    """The problems of a training data file (exported or generated rows: each row's problem,
    with its ``kind`` when the row names one) or of a problem file or bundled sample.

    Example:
        >>> len(data_problems("gsm8k")) > 10
        True
    """
    if not is_export(Path(source)):
        return load_problems(source)
    problems = {}
    for row in read_rows(Path(source)):
        info = row["extra_info"]
        text = str(info.get("problem") or "")
        if text and text not in problems:
            kind = info.get("kind")
            problems[text] = Problem(id=f"train-{len(problems)}", problem=text,
                                     answer=row["reward_model"]["ground_truth"],
                                     kind=str(kind) if kind else None)  # fmt: skip
    return list(problems.values())


class TrainingStudy(Study):
    """A study some of whose conditions train first (``train:`` in the study file)."""

    trains = True

    def __init__(self, *args: Any, log: TrainingLog | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log = log
        self.records: dict[str, dict[str, Any]] = {}
        for name, condition in self.conditions.items():
            if condition.train is not None:
                self.training_settings(name, condition.train, self.file.seeds[0])

    def required_models(self) -> dict[str, list[str | None]]:
        """The study's own models and, per training condition, the bundled models it trains
        and judges with (a GRPO condition's judge is needed hours in)."""
        found = super().required_models()
        for name, condition in self.conditions.items():
            if condition.train is None:
                continue
            settings = self.training_settings(name, condition.train, self.file.seeds[0])
            models = [getattr(settings, "model", None)]
            judge, weights = getattr(settings, "judge", None), getattr(settings, "weights", None)
            if judge and judge.enabled and weights and weights.novelty > 0 and judge.model:
                models.append(judge.model if judge.backend in LOCAL_KINDS else None)
            found[f"condition {name}"] = models
        return found

    def training_folder(self, name: str, seed: int) -> Path:
        """Where condition ``name`` trains at ``seed``.

        Example:
            >>> from tmas.eval.study_loading import parse_study
            >>> study = TrainingStudy(parse_study({"name": "s", "reference": "a",
            ...     "conditions": {"a": {}}}), Path("out"))
            >>> study.training_folder("a", 2).as_posix()
            'out/training/a/seed-2'
        """
        return self.out_dir / "training" / name / f"seed-{seed}"

    def training_settings(self, name: str, train: Training, seed: int) -> BaseModel:
        """The trainer's settings of condition ``name`` at ``seed`` (a warm start's adapter
        named, not trained); StudyError naming what is wrong."""
        values = dict(train.settings, seed=seed)
        values["data"] = self.file.path(str(values["data"]))
        if str(values.get("graph", "")).endswith((".yaml", ".yml", ".json")):
            values["graph"] = self.file.path(str(values["graph"]))
        if train.warm_start is not None:
            if train.kind == "latent":
                raise StudyError(f"condition {name}: a latent training cannot warm_start")
            start = self.training_folder(train.warm_start, seed) / "adapter"
            values["init_adapter"] = str(start.resolve())
        try:
            return settings_class(train.kind)(**values)
        except ValidationError as exc:
            problems = describe_validation_error(exc)
            raise StudyError(f"condition {name}: train.settings: {problems}") from None

    def training_problems(self) -> list[Problem]:
        """Every training condition's data problems (left out of the study's)."""
        found: list[Problem] = []
        for condition in self.conditions.values():
            if condition.train is not None:
                found += data_problems(self.file.path(str(condition.train.settings["data"])))
        return found

    def trained_adapter(self, name: str, seed: int) -> str:
        """Condition ``name``'s adapter at ``seed``, trained now unless a finished training
        of the same settings is there (a warm start's own training first)."""
        train = self.conditions[name].train
        assert train is not None
        if train.warm_start is not None:
            self.trained_adapter(train.warm_start, seed)
        settings = self.training_settings(name, train, seed)
        folder = self.training_folder(name, seed)
        label = f"{name}/seed-{seed}"
        record = finished_record(folder, settings)
        if record is None:
            if self.log is not None:
                self.log(f"training {label} ({train.kind}) in {folder}")
            try:
                record = run_training(train.kind, settings, folder)
            except (ValueError, OSError) as exc:  # data, model files, another training there
                raise StudyError(f"condition {name}: training at seed {seed}: {exc}") from None
            if self.log is not None:
                self.log(f"trained {label}: {record['steps']} steps, {record['train_seconds']} s")
        self.records[label] = record
        return str(record["adapter"])

    def design_extras(self) -> dict[str, Any]:
        """Each training's record, by condition and seed, for ``design.json``."""
        return {"trainings": self.records}


def finished_record(folder: Path, settings: BaseModel) -> dict[str, Any] | None:
    """The record of a finished training of ``settings`` in ``folder`` whose adapter is
    there, else None; its inputs compare by content and its adapter is the folder's own, so a
    study folder moved or copied keeps its trainings.

    Example:
        >>> from tmas.training.rejection_sft import SFTSettings
        >>> finished_record(Path("/no/such"), SFTSettings(data="/rows.jsonl")) is None
        True
    """
    try:
        record = json.loads((folder / SETTINGS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if record.get("status") != "finished" or same_training(record, settings, growable=()):
        return None
    adapter = folder / "adapter"  # where it was trained, wherever the folder is now
    return {**record, "adapter": str(adapter)} if adapter.is_dir() else None
