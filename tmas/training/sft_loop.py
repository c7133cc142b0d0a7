"""The supervised fine-tuning loop the SFT trainers share (``tmas train latent`` and
``tmas train sft``): a LoRA adapter created under the training's seed, transformers' Trainer
whose loss is :func:`tmas.training.latent_chain.example_loss` of each row, the mean loss of a
few rows before and after, and the run itself (:func:`run_sft`: output record, resuming,
the adapter).

A row is ``{"segments": [...], "final_ids": [...], "target_ids": [...]}``: latent segments the
base weights build (none for a plain prompt), the prompt's ids and the target's ids.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from statistics import mean
from typing import Any

from tmas.llm.hf.model_loading import INSTALL_HINT
from tmas.llm.model_files import ModelFileError
from tmas.training.latent_chain import example_loss
from tmas.training.metrics import keep_steps_up_to
from tmas.training.trainer_runs import (
    SETTINGS_FILE,
    checkpoint_step,
    finish_training,
    metrics_callback,
    resume_checkpoint,
    save_adapter,
    settings_record,
    trainer_arguments,
    without_log_printing,
    write_json,
)


def lora_model(base: Any, settings: Any, adapter: str | None = None) -> Any:
    """``base`` with a trainable LoRA adapter: ``adapter``'s weights when given (a warm start),
    else a new one initialised under ``settings.seed`` (the same seed gives the same initial
    adapter, whatever ran before in the process).

    Example (with ``tmas[train]``)::

        model = lora_model(base, LatentSFTSettings(data="gsm8k", seed=3))
    """
    try:
        from peft import PeftModel, get_peft_model
        from transformers import set_seed
    except ImportError as exc:
        raise ModelFileError(f"training needs {exc.name}: {INSTALL_HINT}") from exc
    set_seed(settings.seed)
    if adapter is not None:
        return PeftModel.from_pretrained(base, adapter, is_trainable=True)
    return get_peft_model(base, lora_config(settings))


def lora_config(settings: Any) -> Any:
    """PEFT's LoRA config of ``settings`` (rank, alpha, dropout) on every linear layer.

    Example (with ``tmas[train]``)::

        lora_config(GRPOSettings(data="rows.jsonl")).r  # 8
    """
    from peft import LoraConfig

    return LoraConfig(
        r=settings.lora_r,
        lora_alpha=settings.lora_alpha,
        lora_dropout=settings.lora_dropout,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )


def mean_loss(model: Any, rows: list[dict[str, Any]]) -> float:
    """The mean target loss over ``rows``, without gradients.

    Example (with ``tmas[train]``)::

        before = mean_loss(model, rows[:4])
    """
    import torch

    with torch.no_grad():
        return mean(float(example_loss(model, row)) for row in rows)


def sft_trainer(model: Any, settings: Any, out_dir: Path, rows: list, progress: bool) -> Any:
    """transformers' Trainer whose loss is the mean :func:`example_loss` of the batch's rows
    (``settings``: steps, batch_size, learning_rate, seed, save_every, device).

    Example (with ``tmas[train]``)::

        sft_trainer(peft_model, settings, Path("out"), rows, progress=False).train()
    """
    from torch.utils.data import Dataset
    from transformers import Trainer, TrainingArguments

    class Rows(Dataset):
        def __len__(self) -> int:
            return len(rows)

        def __getitem__(self, index: int) -> dict[str, Any]:
            return rows[index]

    class RowLossTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):  # noqa: ANN001
            plain = self.accelerator.unwrap_model(model)  # a latent trace needs the model itself
            losses = [example_loss(plain, row) for row in inputs["rows"]]
            return sum(losses) / len(losses)

    args = TrainingArguments(
        **trainer_arguments(settings, out_dir, progress),
        max_steps=settings.steps,
        per_device_train_batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        remove_unused_columns=False,
    )
    return RowLossTrainer(
        model=model,
        args=args,
        train_dataset=Rows(),
        data_collator=lambda batch: {"rows": batch},
        callbacks=[metrics_callback(out_dir / "metrics.jsonl")],
    )


def run_sft(
    settings: Any,
    out_dir: Path,
    saved: dict[str, Any],
    base: Any,
    rows: list[dict[str, Any]],
    progress: bool,
    *,
    tokenizer: Any,
    checkpoint: str,
    described: dict[str, Any],
    init_adapter: str | None = None,
    adapter_records: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Train (or resume) a LoRA adapter on ``base`` over ``rows`` and return the finished
    record of ``training.json``: the settings, ``described`` (what the trainer adds: the rows
    it used, the chain it trained), the loss of a few rows before (kept from the ``saved``
    record of a resumed run) and after; ``adapter/`` holds the adapter and
    ``adapter_records`` once training finished.

    Example (with ``tmas[train]``)::

        run_sft(settings, out, {}, base, rows, False, tokenizer=tokenizer,
                checkpoint=folder, described={"rows": {"used": len(rows)}})
    """
    last = resume_checkpoint(out_dir, settings.steps)
    model = lora_model(base, settings, init_adapter)
    probe = rows[: max(settings.batch_size, 4)]
    before = saved.get("loss_before")
    if before is None:  # the untrained adapter is the identity: the base model's loss
        before = mean_loss(model, probe)
    record = {
        **settings_record(settings),
        "checkpoint": checkpoint,
        "status": "running",
        **described,
        "loss_before": before,
    }
    write_json(out_dir / SETTINGS_FILE, record)  # no adapter until this training finishes
    shutil.rmtree(out_dir / "adapter", ignore_errors=True)
    keep_steps_up_to(out_dir / "metrics.jsonl", checkpoint_step(last) if last else 0)
    trainer = without_log_printing(sft_trainer(model, settings, out_dir, rows, progress), progress)
    started = time.monotonic()
    trainer.train(resume_from_checkpoint=last)
    model.eval()
    after = mean_loss(model, probe)
    adapter = save_adapter(model, tokenizer, settings.model, out_dir, adapter_records)
    return finish_training(
        out_dir, record, trainer, last, adapter, started,
        loss_after=after, loss_problems=len(probe),
    )  # fmt: skip
