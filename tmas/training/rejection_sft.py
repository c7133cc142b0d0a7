"""``tmas train sft``: rejection-sampling fine-tuning. The solver's own rollouts, exported from
saved runs (``tmas export rollouts``), are kept when verified correct against the gold answer,
and a LoRA adapter learns to write each kept response to the exact prompt the solver was sent
(the run's templates and overrides included). A warm start for GRPO
(``tmas train grpo --init-adapter DIR/adapter``): it moves the base pass rate into the band
where sampled groups have reward spread.

Output folder: as ``tmas train latent`` (``training.json``, ``checkpoints/``,
``metrics.jsonl``, ``adapter/``); load the adapter with ``--backend hf --adapter DIR/adapter``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tmas.answers.grading import is_correct
from tmas.llm.checkpoints import checkpoint_for
from tmas.llm.hf.model_loading import load_base, pick_device
from tmas.training.data_files import DataFileError, read_rows
from tmas.training.sft_loop import run_sft
from tmas.training.trainer_runs import prepare_output


class SFTSettings(BaseModel):
    """What ``tmas train sft`` trains: exported rows, base model, LoRA and SFT settings.

    Example:
        >>> SFTSettings(data="/rows.jsonl").max_per_problem
        4
    """

    model_config = ConfigDict(extra="forbid")

    data: str = Field(description="rows from tmas export rollouts (.parquet/.jsonl)")
    model: str = "smollm2"
    init_adapter: str | None = Field(default=None, description="an adapter to continue")
    steps: int = Field(default=20, ge=1)
    batch_size: int = Field(default=2, ge=1, description="responses per step")
    learning_rate: float = Field(default=1e-4, gt=0)
    lora_r: int = Field(default=8, ge=1)
    lora_alpha: int = Field(default=16, ge=1)
    lora_dropout: float = Field(default=0.0, ge=0, lt=1)
    max_per_problem: int | None = Field(
        default=4, ge=1, description="verified responses kept per problem (None: all)"
    )
    max_target_tokens: int = Field(default=256, ge=1, description="longer responses left out")
    max_prompt_tokens: int = Field(default=1024, ge=1, description="longer prompts left out")
    seed: int = 0
    save_every: int = Field(default=5, ge=1, description="steps between checkpoints")
    device: str | None = None


def verified_rows(
    rows: list[dict[str, Any]], max_per_problem: int | None = None
) -> tuple[list[dict[str, Any]], Counter]:
    """The rows whose response was verified correct against the row's gold answer, each
    (prompt, response) once and at most ``max_per_problem`` per problem, in the rows' order;
    and how many were left out, by reason.

    Example:
        >>> def row(answer, text="x"):
        ...     return {"prompt": [{"role": "user", "content": "1+1?"}],
        ...             "reward_model": {"ground_truth": "2"},
        ...             "extra_info": {"problem": "1+1?", "response": text,
        ...                            "response_answer": answer}}
        >>> kept, left = verified_rows([row("2"), row("3"), row("2"), row("2", "y")], 5)
        >>> len(kept), dict(left)
        (2, {'wrong': 1, 'repeated': 1})
    """
    kept: list[dict[str, Any]] = []
    left: Counter = Counter()
    seen: set[tuple[str, str]] = set()
    per_problem: Counter = Counter()
    for row in rows:
        info = row.get("extra_info") or {}
        response = str(info.get("response") or "")
        if not response.strip():
            left["no response"] += 1
            continue
        if not is_correct(info.get("response_answer") or None, row["reward_model"]["ground_truth"]):
            left["wrong"] += 1
            continue
        key = (repr(row["prompt"]), response)
        problem = str(info.get("problem") or repr(row["prompt"]))
        if key in seen:
            left["repeated"] += 1
        elif max_per_problem is not None and per_problem[problem] >= max_per_problem:
            left["over max_per_problem"] += 1
        else:
            seen.add(key)
            per_problem[problem] += 1
            kept.append(row)
    return kept, left


def sft_example(tokenizer: Any, row: dict[str, Any]) -> dict[str, Any]:
    """A training row of the loop: the row's chat prompt (with the generation prompt, as the
    solver was sent it) and its response, ending in the end-of-turn token.

    Example (with ``tmas[train]``)::

        example = sft_example(tokenizer, exported_row)
    """
    prompt_ids = tokenizer.apply_chat_template(
        row["prompt"], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    response = str(row["extra_info"]["response"])
    target_ids = tokenizer(response, add_special_tokens=False)["input_ids"]
    return {
        "segments": [],
        "final_ids": list(prompt_ids),
        "target_ids": [*target_ids, int(tokenizer.eos_token_id)],
    }


def training_examples(
    settings: SFTSettings, tokenizer: Any
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The examples of the verified rows that fit the budgets, and the counts of the rows
    read, kept and left out (by reason). DataFileError when none is left."""
    rows = read_rows(Path(settings.data))
    kept, left = verified_rows(rows, settings.max_per_problem)
    examples = []
    for row in kept:
        example = sft_example(tokenizer, row)
        if len(example["final_ids"]) > settings.max_prompt_tokens:
            left["prompt too long"] += 1
        elif len(example["target_ids"]) > settings.max_target_tokens:
            left["response too long"] += 1
        else:
            examples.append(example)
    counts = {"read": len(rows), "used": len(examples), **dict(sorted(left.items()))}
    if not examples:
        raise DataFileError(f"{settings.data}: no verified response to learn from ({counts})")
    return examples, counts


def train_sft(settings: SFTSettings, out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """Train (or resume training) and return the finished record of ``training.json``.

    DataFileError/ValueError/ModelFileError for rows without a verified response, a missing
    model or an output folder holding another training.

    Example (with ``tmas[train]``)::

        train_sft(SFTSettings(data="rows.jsonl", steps=8), Path("rft"))
    """
    saved = prepare_output(out_dir, settings)
    device = pick_device(settings.device)
    checkpoint = checkpoint_for(settings.model)
    base, tokenizer = load_base(checkpoint, settings.model, device)
    examples, counts = training_examples(settings, tokenizer)
    return run_sft(
        settings, out_dir, saved, base.to(device), examples, progress, tokenizer=tokenizer,
        checkpoint=checkpoint, described={"rows": counts}, init_adapter=settings.init_adapter,
    )  # fmt: skip
