"""``tmas orchrm train``: a Bradley-Terry plan reward model (TRL's RewardTrainer, a LoRA
adapter and a score head on a small causal LM) from win/lose plan pairs.

Output folder::

    training.json     settings and status (running / finished) and the held-out accuracy
    checkpoints/      TRL checkpoints, one every ``save_every`` steps (a rerun resumes here)
    metrics.jsonl     one line per logged step: loss, accuracy, margin; held-out accuracy
    adapter/          the finished reward model: LoRA + score head, ``orchrm.json``
"""

from __future__ import annotations

import shutil
import time
import warnings
from pathlib import Path
from typing import Any

from tmas.llm.checkpoints import checkpoint_for
from tmas.llm.hf.model_loading import INSTALL_HINT, load_base, pick_device
from tmas.llm.model_files import ModelFileError
from tmas.orchrm.pairs import PairsError, held_out_problems, read_pairs
from tmas.orchrm.plans import plan_digest
from tmas.orchrm.reward_model import (
    INPUT_FORMAT,
    RM_RECORD,
    PlanRewardModel,
    fitted_problem,
    render_input,
)
from tmas.orchrm.rm_settings import RewardModelSettings
from tmas.training.metrics import append_metrics, keep_steps_up_to
from tmas.training.trainer_runs import (
    SETTINGS_FILE,
    checkpoint_step,
    dataset_bars,
    finish_training,
    last_complete_checkpoint,
    metrics_callback,
    prepare_output,
    save_adapter,
    settings_record,
    trainer_arguments,
    without_log_printing,
    write_json,
)


def split_by_problem(
    pairs: list[dict[str, Any]], fraction: float, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Training and held-out pairs: a seeded share of the problems (never a problem on both
    sides) is held out.

    Example:
        >>> pairs = [{"input": f"p{i}", "chosen": "a", "rejected": "b"} for i in range(10)]
        >>> train, held_out = split_by_problem(pairs, 0.2, seed=0)
        >>> len(train), len(held_out), {p["input"] for p in train} & {p["input"] for p in held_out}
        (8, 2, set())
    """
    held = held_out_problems([p["input"] for p in pairs], fraction, seed)
    return [p for p in pairs if p["input"] not in held], [p for p in pairs if p["input"] in held]


def known_plans(pairs: list[dict[str, Any]]) -> dict[str, str]:
    """The plans of the pairs, digest to name (the digest when the pair names none).

    Example:
        >>> known_plans([{"chosen": "topology: a\\n", "rejected": "topology: b\\n",
        ...               "chosen_plan": "a"}])  # doctest: +ELLIPSIS
        {'...': 'a', '...': '...'}
    """
    plans: dict[str, str] = {}
    for pair in pairs:
        for side in ("chosen", "rejected"):
            digest = plan_digest(pair[side])
            plans.setdefault(digest, str(pair.get(f"{side}_plan") or digest))
    return plans


def pairwise_accuracy(scorer: PlanRewardModel, pairs: list[dict[str, Any]]) -> float | None:
    """The share of pairs whose chosen plan scores above the rejected one (None: no pairs)."""
    if not pairs:
        return None
    right = 0
    for pair in pairs:
        chosen, rejected = scorer.score(pair["input"], [pair["chosen"], pair["rejected"]])
        right += chosen > rejected
    return right / len(pairs)


def fitted_problems(tokenizer: Any, pairs: list[dict[str, Any]], max_length: int) -> list[str]:
    """Each pair's problem fitted beside its two plans by the rule scoring uses
    (:func:`~tmas.orchrm.reward_model.fitted_problem`; RewardModelError when a plan leaves no
    room): no pair is dropped or cut on the right."""
    return [
        fitted_problem(tokenizer, p["input"], [p["chosen"], p["rejected"]], max_length)
        for p in pairs
    ]


def _dataset(pairs: list[dict[str, Any]], problems: list[str]):
    """The pairs as TRL reads them, each with its fitted problem."""
    from datasets import Dataset

    return Dataset.from_list([
        {"chosen": render_input(problem, pair["chosen"]),
         "rejected": render_input(problem, pair["rejected"])}
        for pair, problem in zip(pairs, problems, strict=True)
    ])  # fmt: skip


def trainer_config(settings: RewardModelSettings, out_dir: Path, progress: bool, held_out: bool):
    """TRL's RewardConfig for ``settings``."""
    from trl import RewardConfig

    return RewardConfig(
        **trainer_arguments(settings, out_dir, progress),
        num_train_epochs=settings.epochs,
        per_device_train_batch_size=settings.batch_size,
        per_device_eval_batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        max_length=settings.max_length,
        eval_strategy="epoch" if held_out else "no",
    )


def _pairs(settings: RewardModelSettings) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    pairs = read_pairs(Path(settings.pairs))
    if settings.eval_pairs:
        return pairs, read_pairs(Path(settings.eval_pairs))
    return split_by_problem(pairs, settings.eval_fraction, settings.seed)


def train_reward_model(
    settings: RewardModelSettings, out_dir: Path, progress: bool = True
) -> dict[str, Any]:
    """Train (or resume training) and return the finished record of ``training.json``.

    PairsError for a pairs file without what training needs, ModelFileError for a missing
    model, ValueError for an output folder that holds another training.

    Example (with ``tmas[train]``)::

        train_reward_model(RewardModelSettings(pairs="pairs.jsonl"), Path("rm"))
    """
    prepare_output(out_dir, settings, growable=("epochs",))
    train_pairs, held_out = _pairs(settings)
    if not train_pairs:
        raise PairsError(f"{settings.pairs}: every pair was held out; lower --eval-fraction")
    checkpoint = checkpoint_for(settings.model)
    warnings.filterwarnings("ignore", message="TRL currently supports vLLM versions")
    try:
        from peft import LoraConfig
        from transformers import set_seed
        from trl import RewardTrainer
    except ImportError as exc:
        raise ModelFileError(f"training needs {exc.name}: {INSTALL_HINT}") from exc
    set_seed(settings.seed)  # the new score head: the same seed, the same head, whatever ran
    model, tokenizer = load_base(
        checkpoint, settings.model, pick_device(settings.device), score_head=True
    )
    train_problems = fitted_problems(tokenizer, train_pairs, settings.max_length)
    held_problems = fitted_problems(tokenizer, held_out, settings.max_length)
    shortened = sum(
        fitted != pair["input"]
        for fitted, pair in zip(train_problems + held_problems, train_pairs + held_out, strict=True)
    )
    last = last_complete_checkpoint(out_dir / "checkpoints")
    record: dict[str, Any] = {
        **settings_record(settings),
        "checkpoint": checkpoint,
        "status": "running",
    }
    write_json(out_dir / SETTINGS_FILE, record)  # no reward model until this training finishes
    shutil.rmtree(out_dir / "adapter", ignore_errors=True)
    metrics_path = out_dir / "metrics.jsonl"
    keep_steps_up_to(metrics_path, checkpoint_step(last) if last else 0)
    with dataset_bars(progress):
        trainer = RewardTrainer(
            model=model,
            args=trainer_config(settings, out_dir, progress, bool(held_out)),
            train_dataset=_dataset(train_pairs, train_problems),
            eval_dataset=_dataset(held_out, held_problems) if held_out else None,
            processing_class=tokenizer,
            peft_config=LoraConfig(
                task_type="SEQ_CLS",
                r=settings.lora_r,
                lora_alpha=settings.lora_alpha,
                lora_dropout=settings.lora_dropout,
                target_modules="all-linear",
                modules_to_save=["score"],
            ),
            callbacks=[metrics_callback(metrics_path)],
        )
    without_log_printing(trainer, progress)
    started = time.monotonic()
    trainer.train(resume_from_checkpoint=last)
    trainer.model.eval()
    plans = known_plans(train_pairs)
    scorer = PlanRewardModel(trainer.model, tokenizer, {"plans": plans}, settings.max_length)
    accuracy = {"train": pairwise_accuracy(scorer, train_pairs)}
    accuracy["held_out"] = pairwise_accuracy(scorer, held_out)
    append_metrics(
        metrics_path,
        trainer.state.global_step,
        {f"{k}_pairwise_accuracy": v for k, v in accuracy.items() if v is not None},
    )
    rm_record = {
        "input_format": INPUT_FORMAT,
        "base_model": settings.model,
        "max_length": settings.max_length,
        "plans": plans,
        "pairs": {
            "train": len(train_pairs),
            "held_out": len(held_out),
            "problems_shortened": shortened,
        },
        "pairwise_accuracy": accuracy,
    }
    adapter = save_adapter(
        trainer.model, tokenizer, settings.model, out_dir, records={RM_RECORD: rm_record}
    )
    return finish_training(
        out_dir, record, trainer, last, adapter, started,
        pairs=rm_record["pairs"], pairwise_accuracy=accuracy,
    )  # fmt: skip
