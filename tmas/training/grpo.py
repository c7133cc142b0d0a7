"""``tmas train grpo``: GRPO with a LoRA adapter (TRL's GRPOTrainer, PEFT) on exported rows,
scored by the hybrid reward.

Output folder::

    training.json     settings and status (running / finished), written first and last
    checkpoints/      TRL checkpoints, one every ``save_every`` steps (a rerun resumes here)
    metrics.jsonl     one line per step: loss, KL, lengths, each reward component, per _source
    rewards.png       the rewards over steps
    adapter/          the finished LoRA adapter (only once training finished)
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
from tmas.training.data_files import DataFileError, read_rows
from tmas.training.grpo_settings import GRPOSettings
from tmas.training.metrics import keep_steps_up_to, plot_rewards, read_metrics, spread_summary
from tmas.training.novelty import NoveltyJudge, load_template
from tmas.training.rewards import HybridReward, Sample
from tmas.training.sft_loop import lora_config, lora_model
from tmas.training.spread import spread_filtering_trainer
from tmas.training.trainer_runs import (
    SETTINGS_FILE,
    checkpoint_step,
    finish_training,
    metrics_callback,
    prepare_output,
    resume_checkpoint,
    save_adapter,
    settings_record,
    trainer_arguments,
    write_json,
)
from tmas.training.trl_rewards import TRLRewards


def make_judge(settings: GRPOSettings, rows: list[dict[str, Any]]) -> NoveltyJudge | None:
    """The novelty judge the settings name; None when disabled, when novelty weighs nothing or
    when no row is a guideline row with a bank. ValueError when one is needed and none is named:
    the base model judges itself only when ``self_judge`` says so.

    Example:
        >>> make_judge(GRPOSettings(data="/d", judge={"enabled": False}), []) is None
        True
    """
    judge = settings.judge
    needed = settings.weights.novelty > 0 and any(judged_row(row) for row in rows)
    if not (judge.enabled and needed):
        return None
    if not judge.named:
        raise ValueError(
            "guideline rows need a novelty judge: name one (--judge-model, --judge-backend), "
            "let the base model judge itself (--judge-self), or score no novelty (--no-judge)"
        )
    from tmas.llm.backend import BackendSpec, make_chat_model

    spec = BackendSpec(
        kind=judge.backend,  # type: ignore[arg-type]
        model=judge.model or settings.model,
        base_url=judge.base_url,
        device=settings.device if judge.backend == "hf" else None,
    ).resolved()
    model = make_chat_model(spec, max_tokens=judge.max_tokens, temperature=0)
    return NoveltyJudge(model, load_template(judge.prompt_file), judge.max_tokens)


def judged_row(row: dict[str, Any]) -> bool:
    """Whether novelty is scored on ``row``: a guideline row whose bank is not empty.

    Example:
        >>> judged_row({"_source": "guideline", "extra_info": {"guidelines": ["Count"]}})
        True
    """
    sample = Sample.from_row(row)
    return sample.source == "guideline" and bool(sample.guidelines)


def fitting_rows(
    rows: list[dict[str, Any]], tokenizer: Any, max_prompt_length: int
) -> tuple[list[dict[str, Any]], int]:
    """The rows whose chat prompt (with the generation prompt, as TRL renders it) has at most
    ``max_prompt_length`` tokens, and how many were longer. The installed TRL does not cut
    prompts, and cutting one would drop the system prompt or the problem."""
    kept = [
        row
        for row in rows
        if len(
            tokenizer.apply_chat_template(
                row["prompt"], add_generation_prompt=True, tokenize=True, return_dict=False
            )
        )
        <= max_prompt_length
    ]
    return kept, len(rows) - len(kept)


def load_policy(settings: GRPOSettings) -> tuple[Any, Any, str]:
    """The base model (float32 on CPU), its tokenizer and its checkpoint folder."""
    checkpoint = checkpoint_for(settings.model)
    model, tokenizer = load_base(checkpoint, settings.model, pick_device(settings.device))
    return model, tokenizer, checkpoint


def trainer_config(settings: GRPOSettings, out_dir: Path, progress: bool, weights: list[float]):
    """TRL's GRPOConfig for ``settings``."""
    from trl import GRPOConfig

    return GRPOConfig(
        **trainer_arguments(settings, out_dir, progress),
        max_steps=settings.steps,
        per_device_train_batch_size=settings.batch_size,
        num_generations=settings.num_generations,
        max_completion_length=settings.max_completion_length,
        mask_truncated_completions=settings.mask_truncated_completions,
        scale_rewards=settings.scale_rewards,
        loss_type=settings.loss_type,
        learning_rate=settings.learning_rate,
        beta=settings.beta,
        temperature=settings.temperature,
        reward_weights=weights,
        use_vllm=settings.use_vllm,
    )


def trainer_record(config: Any) -> dict[str, Any]:
    """What the trainer was actually set to (read back from TRL's config, with TRL's version),
    for ``training.json``."""
    import trl

    names = (
        "scale_rewards", "mask_truncated_completions", "loss_type", "max_completion_length",
        "num_generations", "temperature", "top_p", "top_k", "beta", "epsilon",
        "per_device_train_batch_size", "gradient_accumulation_steps", "steps_per_generation",
    )  # fmt: skip
    return {"trl": trl.__version__, **{name: getattr(config, name, None) for name in names},
            "prompt_truncation": "none: rows over max_prompt_length are left out"}  # fmt: skip


def train_grpo(settings: GRPOSettings, out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """Train (or resume training) and return the finished record of ``training.json``.

    ValueError/ModelFileError for bad data, a missing model, or an output folder that cannot
    be written or holds another training; nothing is marked finished unless it finished.

    Example (with ``tmas[train]``)::

        train_grpo(GRPOSettings(data="rows.parquet", steps=3), Path("out"))
    """
    prepare_output(out_dir, settings)
    rows = read_rows(Path(settings.data))
    judge = make_judge(settings, rows)
    model, tokenizer, checkpoint = load_policy(settings)
    rows, too_long = fitting_rows(rows, tokenizer, settings.max_prompt_length)
    if not rows:
        raise DataFileError(
            f"{settings.data}: every prompt is longer than {settings.max_prompt_length} tokens"
        )
    if not settings.use_vllm:  # TRL warns about the installed vLLM even when it is not used
        warnings.filterwarnings("ignore", message="TRL currently supports vLLM versions")
    try:
        from datasets import Dataset
        from peft import LoraConfig  # noqa: F401  (checked here, used by TRL)
    except ImportError as exc:
        raise ModelFileError(f"training needs {exc.name}: {INSTALL_HINT}") from exc
    last = resume_checkpoint(out_dir, settings.steps)
    try:
        dataset = Dataset.from_list(rows)
    except (TypeError, ValueError) as exc:  # pyarrow cannot put the rows in one table
        raise DataFileError(f"{settings.data}: rows of different shapes ({exc})") from None
    rewards = TRLRewards(HybridReward(settings.weights, judge))
    config = trainer_config(settings, out_dir, progress, rewards.weights())
    record = {
        **settings_record(settings),
        "trainer": trainer_record(config),
        "checkpoint": checkpoint,
        "rows": {"used": len(rows), "prompt_too_long": too_long},
        "status": "running",
    }
    write_json(out_dir / SETTINGS_FILE, record)  # no adapter until this training finishes
    shutil.rmtree(out_dir / "adapter", ignore_errors=True)
    metrics_path = out_dir / "metrics.jsonl"
    keep_steps_up_to(metrics_path, checkpoint_step(last) if last else 0)
    trainer_class = spread_filtering_trainer(rewards.last_totals, settings.drop_zero_spread)
    if settings.init_adapter is not None:  # a warm start: TRL keeps a frozen copy as reference
        model = lora_model(model, settings, settings.init_adapter)
    trainer = trainer_class(
        model=model,
        reward_funcs=rewards.functions(),
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=None if settings.init_adapter else lora_config(settings),  # TRL seeds it
        callbacks=[metrics_callback(metrics_path)],
    )
    started = time.monotonic()
    trainer.train(resume_from_checkpoint=last)
    adapter = save_adapter(trainer.model, tokenizer, settings.model, out_dir)
    finish_training(
        out_dir, record, trainer, last, adapter, started,
        judge_failures=rewards.reward.judge_failures,  # in this process (since a resume)
        excluded_completions=rewards.excluded,
        dropped_zero_spread_groups=trainer.dropped_groups,
        spread=spread_summary(read_metrics(metrics_path)),  # every step, across resumes
    )  # fmt: skip
    plot_rewards(read_metrics(metrics_path), out_dir / "rewards.png")
    return record
