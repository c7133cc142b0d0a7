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

from pathlib import Path
from typing import Any

from tmas.llm.checkpoints import checkpoint_for
from tmas.llm.hf.model_loading import load_base, pick_device
from tmas.training.latent_chain import LatentChain, target_text
from tmas.training.latent_data import latent_examples
from tmas.training.latent_settings import LatentSFTSettings
from tmas.training.sft_loop import run_sft
from tmas.training.trainer_runs import prepare_output

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
    latent = {"graph": settings.graph, "chain": chain.describe(), "base_model": settings.model}
    return run_sft(
        settings, out_dir, saved, base.to(device), rows, progress, tokenizer=tokenizer,
        checkpoint=checkpoint, described={"chain": chain.describe()},
        adapter_records={LATENT_RECORD: latent},
    )  # fmt: skip
