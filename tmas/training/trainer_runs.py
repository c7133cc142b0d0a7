"""What every training command shares: an output folder that only the same training may
continue, checkpoints a rerun resumes from (those cut short by a kill are dropped), metrics
appended as training logs them, and the finished LoRA adapter written whole."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tmas.llm.content_keys import content_key
from tmas.llm.hf.model_loading import ADAPTER_RECORD, model_shape
from tmas.training.data_files import replace_atomically
from tmas.training.metrics import append_metrics

SETTINGS_FILE = "training.json"


INPUT_SETTINGS = ("data", "init_adapter", "graph", "pairs", "eval_pairs")
"""Settings that name a file or folder a training reads: its record keeps their content keys
(:func:`tmas.llm.content_keys.content_key`), so the same inputs at another path (a study folder
moved or copied) continue the same training, and an input rewritten in place does not."""


def settings_record(settings: BaseModel) -> dict[str, Any]:
    """A training's settings as its record saves them, with the content key of each input.

    Example:
        >>> class Settings(BaseModel):
        ...     data: str
        ...     steps: int = 5
        >>> data = Path(tempfile.mkdtemp()) / "rows.jsonl"
        >>> _ = data.write_text("{}")
        >>> record = settings_record(Settings(data=str(data)))
        >>> record["settings"]["steps"], record["inputs"]["data"].startswith("sha256:")
        (5, True)
    """
    dumped = settings.model_dump()
    inputs = {key: content_key(str(dumped[key])) for key in INPUT_SETTINGS if dumped.get(key)}
    return {"settings": dumped, "inputs": inputs}


def same_training(
    saved: dict[str, Any], settings: BaseModel, growable: tuple[str, ...] = ("steps",)
) -> list[str]:
    """The settings that differ from a saved training's (the ``growable`` ones, such as the
    number of steps, may grow: more steps continue the same training). An input the record
    keeps a content key of (:func:`settings_record`) differs when its content does; one a
    record without keys names at another path, when what lies at the two paths differs (a
    copied folder: both are there; a moved one: the recorded path is gone, so it differs).

    Example:
        >>> class Settings(BaseModel):
        ...     data: str
        ...     steps: int = 5
        >>> same_training({"data": "/a.jsonl", "steps": 3}, Settings(data="/b.jsonl"))
        ['data']
        >>> rows = Path(tempfile.mkdtemp()) / "rows.jsonl"
        >>> _ = rows.write_text("{}")
        >>> saved = settings_record(Settings(data=str(rows)))
        >>> moved = rows.rename(rows.with_name("moved.jsonl"))
        >>> same_training(saved, Settings(data=str(moved)))
        []
        >>> _ = moved.write_text('{"changed": 1}')
        >>> same_training(saved, Settings(data=str(moved)))
        ['data']
    """
    known = saved.get("settings", saved)
    inputs = saved.get("inputs") or {}

    def differs(key: str, value: Any) -> bool:
        if key in inputs and value is not None:
            return inputs[key] != content_key(str(value))
        if known[key] == value:
            return False
        unkeyed_input = key in INPUT_SETTINGS and known[key] and value
        return not unkeyed_input or content_key(str(known[key])) != content_key(str(value))

    return [
        key
        for key, value in settings.model_dump().items()
        if key not in growable and key in known and differs(key, value)
    ]


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON through a temporary file renamed into place.

    Example:
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp()) / "t.json"
        >>> write_json(out, {"a": 1}); json.loads(out.read_text())
        {'a': 1}
    """
    replace_atomically(path, lambda temporary: temporary.write_text(json.dumps(data, indent=2)))


def prepare_output(
    out_dir: Path, settings: BaseModel, growable: tuple[str, ...] = ("steps",)
) -> dict[str, Any]:
    """Create ``out_dir`` (ValueError when it cannot be written) and return the saved record
    of an earlier training there (ValueError when its settings differ); {} when new.

    Example:
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp()) / "run"
        >>> from pydantic import BaseModel
        >>> class Settings(BaseModel):
        ...     data: str
        >>> prepare_output(out, Settings(data="/d.jsonl"))
        {}
    """
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"cannot write to {out_dir}: {exc.strerror or exc}") from None
    path = out_dir / SETTINGS_FILE
    if not path.is_file():
        return {}
    saved = json.loads(path.read_text())
    differing = same_training(saved, settings, growable)
    if differing:
        raise ValueError(
            f"{out_dir} holds a training with other settings ({', '.join(differing)}); "
            "use another --out"
        )
    return saved


def metrics_callback(path: Path):
    """A TrainerCallback that appends each log to ``path`` (see :mod:`tmas.training.metrics`)."""
    from transformers import TrainerCallback

    class MetricsCallback(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
            if logs and state.is_world_process_zero:
                append_metrics(path, state.global_step, logs)

    return MetricsCallback()


def checkpoint_step(path: str | Path) -> int:
    """The step of a TRL checkpoint folder (``checkpoint-N``).

    Example:
        >>> checkpoint_step("/out/checkpoints/checkpoint-12")
        12
    """
    return int(Path(path).name.rsplit("-", 1)[1])


def whole_state(path: Path) -> bool:
    """Whether a checkpoint's trainer state exists and parses (a kill can cut it short).

    Example:
        >>> whole_state(Path("/no/such/trainer_state.json"))
        False
    """
    try:
        return isinstance(json.loads(path.read_text()), dict)
    except (OSError, ValueError):
        return False


def last_complete_checkpoint(folder: Path) -> str | None:
    """The newest checkpoint that was written whole (its ``trainer_state.json``, written last,
    is there). Checkpoints cut short by a kill are removed, so that none is resumed from.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> for step in (1, 2):
        ...     (folder / f"checkpoint-{step}").mkdir()
        >>> (folder / "checkpoint-1" / "trainer_state.json").write_text("{}")
        2
        >>> Path(last_complete_checkpoint(folder)).name, (folder / "checkpoint-2").exists()
        ('checkpoint-1', False)
    """
    if not folder.is_dir():
        return None
    found = [p for p in folder.glob("checkpoint-*") if p.is_dir() and p.name[11:].isdigit()]
    for path in sorted(found, key=checkpoint_step, reverse=True):
        if whole_state(path / "trainer_state.json"):
            return str(path)
        shutil.rmtree(path, ignore_errors=True)
    return None


def trainer_arguments(settings: Any, out_dir: Path, progress: bool) -> dict[str, Any]:
    """The arguments every trainer of ours gives transformers' (or TRL's) config: checkpoints
    under ``out_dir/checkpoints`` every ``settings.save_every`` steps (two kept), a log line
    every step, the seed, the device, no reporting service, the bar only with ``progress``.

    Example:
        >>> from types import SimpleNamespace
        >>> args = trainer_arguments(SimpleNamespace(save_every=5, seed=1, device="cpu"),
        ...                          Path("/out"), progress=False)
        >>> args["save_steps"], args["use_cpu"], args["disable_tqdm"]
        (5, True, True)
    """
    from tmas.llm.hf.model_loading import pick_device

    return {
        "output_dir": str(out_dir / "checkpoints"),
        "logging_steps": 1,
        "save_steps": settings.save_every,
        "save_total_limit": 2,
        "seed": settings.seed,
        "report_to": "none",
        "use_cpu": pick_device(settings.device) == "cpu",
        "bf16": False,
        "disable_tqdm": not progress,
    }


def without_log_printing(trainer: Any, progress: bool) -> Any:
    """``trainer`` without transformers' printer of every log line when the progress bar is
    off (it prints them then; ``metrics.jsonl`` has them).

    Example (with ``tmas[train]``)::

        trainer = without_log_printing(Trainer(...), progress=False)
    """
    if not progress:
        from transformers import PrinterCallback

        trainer.remove_callback(PrinterCallback)
    return trainer


def resume_checkpoint(out_dir: Path, steps: int) -> str | None:
    """The checkpoint a rerun resumes from (None: start afresh); ValueError when the folder is
    already trained past ``steps``.

    Example:
        >>> import tempfile
        >>> resume_checkpoint(Path(tempfile.mkdtemp()), 5) is None
        True
    """
    last = last_complete_checkpoint(out_dir / "checkpoints")
    if last is not None and checkpoint_step(last) > steps:
        raise ValueError(
            f"{out_dir} is already trained to step {checkpoint_step(last)}; "
            f"--steps {steps} cannot go back (use another --out)"
        )
    return last


@contextlib.contextmanager
def dataset_bars(shown: bool) -> Iterator[None]:
    """A context in which ``datasets`` shows its progress bars only if ``shown`` (TRL's
    tokenising and filtering passes draw their own), as they were afterwards.

    Example:
        >>> with dataset_bars(False):
        ...     pass
    """
    import datasets

    before = datasets.is_progress_bar_enabled()
    if not shown:
        datasets.disable_progress_bars()
    try:
        yield
    finally:
        if before:
            datasets.enable_progress_bars()


def save_adapter(
    model: Any,
    tokenizer: Any,
    base_model: str,
    out_dir: Path,
    records: dict[str, dict[str, Any]] | None = None,
) -> Path:
    """Write the LoRA adapter, its record (the base it was trained on) and any other
    ``records`` (file name to JSON data) to ``out_dir / adapter`` through a temporary folder
    renamed into place."""
    target = out_dir / "adapter"
    work = Path(tempfile.mkdtemp(prefix=".adapter.", dir=out_dir))
    try:
        model.save_pretrained(work)
        tokenizer.save_pretrained(work)
        record = {"base_model": base_model, "base_shape": model_shape(model.config)}
        for name, data in {ADAPTER_RECORD: record, **(records or {})}.items():
            write_json(work / name, data)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def finish_training(
    out_dir: Path,
    record: dict[str, Any],
    trainer: Any,
    resumed_from: str | None,
    adapter: Path,
    started: float,
    **figures: Any,
) -> dict[str, Any]:
    """Mark ``record`` finished (steps, the checkpoint resumed from, the adapter, the seconds
    since ``started`` on the monotonic clock, and the trainer's own ``figures``) and write it
    to ``out_dir/training.json``; the record.

    Example:
        >>> from types import SimpleNamespace
        >>> out = Path(tempfile.mkdtemp())
        >>> trainer = SimpleNamespace(state=SimpleNamespace(global_step=3))
        >>> done = finish_training(out, {"status": "running"}, trainer, None, out / "adapter",
        ...                        time.monotonic(), loss_after=0.5)
        >>> done["status"], done["steps"], done["loss_after"]
        ('finished', 3, 0.5)
    """
    record.update(
        status="finished",
        steps=trainer.state.global_step,
        resumed_from=resumed_from,
        adapter=str(adapter),
        train_seconds=round(time.monotonic() - started, 1),
        **figures,
    )
    write_json(out_dir / SETTINGS_FILE, record)
    return record
