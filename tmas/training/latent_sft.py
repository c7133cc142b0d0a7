"""``tmas train latent``: DiffMAS training of the final agent of a chain topology.

Stage I: the upstream agents (base weights, no gradients) build the latent trace of a problem,
exactly as ``latent_mas`` builds it at run time (or, for a text chain such as ``text_mas``,
write their notes once, greedy, before training). Stage II: the final agent, with a LoRA
adapter, reads that trace (or those notes) and is trained by supervised fine-tuning on the
reference answer (gradients through the final agent). The same LoRA budget on ``latent_mas``,
``text_mas`` and a single agent is how the latent channel's own effect is measured.
transformers' Trainer runs the loop, so checkpoints, resuming and logging are its own.

Output folder::

    training.json     settings, status (running / finished), loss before and after
    checkpoints/      one every ``save_every`` steps (a rerun resumes from the last whole one)
    metrics.jsonl     one line per step: loss, learning rate, gradient norm
    adapter/          the finished adapter, with latent.json (the chain it was trained for);
                      load it with tmas solve --graph latent_mas --backend hf --adapter DIR
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from tmas.llm.checkpoints import checkpoint_for
from tmas.llm.hf.model_loading import load_base, pick_device
from tmas.training.latent_chain import LatentChain, target_text
from tmas.training.latent_data import latent_examples
from tmas.training.latent_settings import LatentSFTSettings
from tmas.training.metrics import keep_steps_up_to
from tmas.training.sft_loop import lora_model, mean_loss, sft_trainer
from tmas.training.trainer_runs import (
    SETTINGS_FILE,
    checkpoint_step,
    prepare_output,
    resume_checkpoint,
    save_adapter,
    without_log_printing,
    write_json,
)

LATENT_RECORD = "latent.json"


def training_rows(
    settings: LatentSFTSettings, chain: LatentChain, tokenizer: Any, model: Any = None
) -> list[dict]:
    """One row per example of the data; targets longer than ``max_target_tokens`` are cut
    (their end-of-turn token kept). A text chain's notes are written by ``model`` (the base
    weights) first.

    Example (with ``tmas[train]``)::

        rows = training_rows(LatentSFTSettings(data="gsm8k", limit=4), chain, tokenizer)
    """
    rows = []
    for example in latent_examples(settings.data, settings.limit):
        notes = ""
        if chain.passes_text:
            from tmas.training.text_notes import written_notes

            notes = written_notes(model, tokenizer, chain, example.problem,
                                  settings.notes_max_tokens)  # fmt: skip
        row = chain.example(
            tokenizer, example.problem, target_text(example.answer, example.solution), notes
        )
        if len(row["target_ids"]) > settings.max_target_tokens:
            row["target_ids"] = row["target_ids"][: settings.max_target_tokens - 1] + [
                row["target_ids"][-1]
            ]
        rows.append(row)
    return rows


def train_latent(
    settings: LatentSFTSettings, out_dir: Path, progress: bool = True
) -> dict[str, Any]:
    """Train (or resume training) and return the finished record of ``training.json``.

    ValueError/ModelFileError for bad data, a topology that is not latent, a missing model or an
    output folder that holds another training.

    Example (with ``tmas[train]``)::

        train_latent(LatentSFTSettings(data="gsm8k", limit=8, steps=4), Path("diffmas"))
    """
    from tmas.api import load_topology

    saved = prepare_output(out_dir, settings)
    chain = LatentChain.from_spec(load_topology(settings.graph))
    if saved.get("chain") not in (None, chain.describe()):
        raise ValueError(
            f"{out_dir} trained another chain of agents than {settings.graph} has now; "
            "use another --out"
        )
    device = pick_device(settings.device)
    checkpoint = checkpoint_for(settings.model)
    base, tokenizer = load_base(checkpoint, settings.model, device)
    rows = training_rows(settings, chain, tokenizer, base.to(device))
    last = resume_checkpoint(out_dir, settings.steps)
    model = lora_model(base.to(device), settings)
    probe = rows[: max(settings.batch_size, 4)]
    before = saved.get("loss_before")
    if before is None:  # the untrained adapter is the identity: the base model's loss
        before = mean_loss(model, probe)
    record = {
        "settings": settings.model_dump(),
        "checkpoint": checkpoint,
        "status": "running",
        "chain": chain.describe(),
        "loss_before": before,
    }
    write_json(out_dir / SETTINGS_FILE, record)  # no adapter until this training finishes
    shutil.rmtree(out_dir / "adapter", ignore_errors=True)
    keep_steps_up_to(out_dir / "metrics.jsonl", checkpoint_step(last) if last else 0)
    trainer = sft_trainer(model, settings, out_dir, rows, progress)
    without_log_printing(trainer, progress)
    started = time.monotonic()
    trainer.train(resume_from_checkpoint=last)
    model.eval()
    after = mean_loss(model, probe)
    latent = {"graph": settings.graph, "chain": chain.describe(), "base_model": settings.model}
    adapter = save_adapter(model, tokenizer, settings.model, out_dir, {LATENT_RECORD: latent})
    record.update(
        status="finished",
        steps=trainer.state.global_step,
        resumed_from=last,
        adapter=str(adapter),
        train_seconds=round(time.monotonic() - started, 1),
        loss_after=after,
        loss_problems=len(probe),
    )
    write_json(out_dir / SETTINGS_FILE, record)
    return record
