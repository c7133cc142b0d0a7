"""A finished training counts by what it read, not where: the same inputs at another path (a
study folder moved or copied) keep it; an input rewritten in place differs. A record saved
before inputs had content keys keeps a copied folder (its recorded inputs are still there to
compare) and refuses a moved one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tmas.training.rejection_sft import SFTSettings
from tmas.training.study_training import finished_record
from tmas.training.trainer_runs import SETTINGS_FILE, prepare_output, settings_record


def trained(folder: Path, settings: SFTSettings, *, legacy: bool = False) -> None:
    """``folder`` as a finished training of ``settings`` leaves it (record and adapter)."""
    record = {"settings": settings.model_dump()} if legacy else settings_record(settings)
    record.update(status="finished", steps=1, adapter=str(folder / "adapter"))
    (folder / "adapter").mkdir(parents=True)
    (folder / "adapter" / "adapter_model.safetensors").write_bytes(b"weights")
    (folder / SETTINGS_FILE).write_text(json.dumps(record), encoding="utf-8")


def study(root: Path) -> tuple[Path, SFTSettings]:
    """A study folder with a warm start's adapter and rows: the continuing training's folder
    and settings (:func:`study_paths`)."""
    folder, settings = study_paths(root)
    assert settings.init_adapter is not None
    Path(settings.init_adapter).mkdir(parents=True)
    (Path(settings.init_adapter) / "adapter_model.safetensors").write_bytes(b"warm start")
    Path(settings.data).write_text('{"row": 1}\n', encoding="utf-8")
    return folder, settings


def test_a_moved_study_keeps_its_finished_training(tmp_path: Path) -> None:
    folder, settings = study(tmp_path / "a")
    trained(folder, settings)
    assert finished_record(folder, settings)["adapter"] == str(folder / "adapter")
    shutil.move(tmp_path / "a", tmp_path / "b")
    moved, moved_settings = study_paths(tmp_path / "b")
    record = finished_record(moved, moved_settings)
    assert record is not None and record["adapter"] == str(moved / "adapter")
    assert prepare_output(moved, moved_settings)  # a longer training there would continue it


def study_paths(root: Path) -> tuple[Path, SFTSettings]:
    """The continuing training's folder and settings as the study names them under ``root``."""
    start = root / "training" / "sft" / "seed-0" / "adapter"
    return root / "training" / "grpo" / "seed-0", SFTSettings(
        data=str(root / "rows.jsonl"), init_adapter=str(start), steps=1
    )


@pytest.mark.parametrize("rewritten", ["rows.jsonl", "training/sft/seed-0/adapter/x.bin"])
def test_an_input_rewritten_in_place_is_another_training(tmp_path: Path, rewritten: str) -> None:
    folder, settings = study(tmp_path)
    trained(folder, settings)
    (tmp_path / rewritten).write_text("changed", encoding="utf-8")
    assert finished_record(folder, settings) is None
    with pytest.raises(ValueError, match="holds a training with other settings"):
        prepare_output(folder, settings)


def test_a_copied_folder_keeps_a_record_without_content_keys(tmp_path: Path) -> None:
    folder, settings = study(tmp_path / "a")
    trained(folder, settings, legacy=True)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    copy, copy_settings = study_paths(tmp_path / "b")
    record = finished_record(copy, copy_settings)  # the recorded inputs are there, the same
    assert record is not None and record["adapter"] == str(copy / "adapter")
    (tmp_path / "b" / "rows.jsonl").write_text("changed", encoding="utf-8")
    assert finished_record(copy, copy_settings) is None
    with pytest.raises(ValueError, match=r"other settings \(data\)"):
        prepare_output(copy, copy_settings)


def test_a_record_without_content_keys_compares_paths(tmp_path: Path) -> None:
    folder, settings = study(tmp_path / "a")
    trained(folder, settings, legacy=True)
    assert finished_record(folder, settings) is not None  # in place: the same paths
    shutil.move(tmp_path / "a", tmp_path / "b")
    moved, moved_settings = study_paths(tmp_path / "b")
    assert finished_record(moved, moved_settings) is None
    with pytest.raises(ValueError, match=r"other settings \(data, init_adapter\)"):
        prepare_output(moved, moved_settings)  # refused, never trained over
