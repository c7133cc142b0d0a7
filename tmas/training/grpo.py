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
from tmas.training.metrics import keep_steps_up_to, plot_rewards, read_metrics
from tmas.training.novelty import NoveltyJudge, load_template
from tmas.training.rewards import HybridReward
from tmas.training.trainer_runs import (
    SETTINGS_FILE,
    checkpoint_step,
    metrics_callback,
    prepare_output,
    resume_checkpoint,
    save_adapter,
    trainer_arguments,
    write_json,
)
from tmas.training.trl_rewards import TRLRewards


def make_judge(settings: GRPOSettings) -> NoveltyJudge | None:
    """The novelty judge the settings name (None when disabled): by default the base model
    being trained, on the judge's backend (an openai judge needs its model named)."""
    judge = settings.judge
    if not judge.enabled:
        return None
    from tmas.config import TMASConfig
    from tmas.llm.backend import BackendSpec, make_main_model

    spec = BackendSpec(
        kind=judge.backend,  # type: ignore[arg-type]
        model=judge.model or (settings.model if judge.backend != "openai" else None),
        base_url=judge.base_url,
        device=settings.device if judge.backend == "hf" else None,
    ).resolved()
    model = make_main_model(spec, TMASConfig(solver_max_tokens=judge.max_tokens, temperature=0))
    return NoveltyJudge(model, load_template(judge.prompt_file), judge.max_tokens)


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
        learning_rate=settings.learning_rate,
        beta=settings.beta,
        temperature=settings.temperature,
        reward_weights=weights,
        use_vllm=settings.use_vllm,
    )


def train_grpo(settings: GRPOSettings, out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """Train (or resume training) and return the finished record of ``training.json``.

    ValueError/ModelFileError for bad data, a missing model, or an output folder that cannot
    be written or holds another training; nothing is marked finished unless it finished.

    Example (with ``tmas[train]``)::

        train_grpo(GRPOSettings(data="rows.parquet", steps=3), Path("out"))
    """
    prepare_output(out_dir, settings)
    rows = read_rows(Path(settings.data))
    judge = make_judge(settings)
    model, tokenizer, checkpoint = load_policy(settings)
    if not settings.use_vllm:  # TRL warns about the installed vLLM even when it is not used
        warnings.filterwarnings("ignore", message="TRL currently supports vLLM versions")
    try:
        from datasets import Dataset
        from peft import LoraConfig
        from trl import GRPOTrainer
    except ImportError as exc:
        raise ModelFileError(f"training needs {exc.name}: {INSTALL_HINT}") from exc
    last = resume_checkpoint(out_dir, settings.steps)
    try:
        dataset = Dataset.from_list(rows)
    except (TypeError, ValueError) as exc:  # pyarrow cannot put the rows in one table
        raise DataFileError(f"{settings.data}: rows of different shapes ({exc})") from None
    rewards = TRLRewards(HybridReward(settings.weights, judge))
    record = {"settings": settings.model_dump(), "checkpoint": checkpoint, "status": "running"}
    write_json(out_dir / SETTINGS_FILE, record)  # no adapter until this training finishes
    shutil.rmtree(out_dir / "adapter", ignore_errors=True)
    metrics_path = out_dir / "metrics.jsonl"
    keep_steps_up_to(metrics_path, checkpoint_step(last) if last else 0)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=rewards.functions(),
        args=trainer_config(settings, out_dir, progress, rewards.weights()),
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=LoraConfig(
            r=settings.lora_r,
            lora_alpha=settings.lora_alpha,
            lora_dropout=settings.lora_dropout,
            target_modules="all-linear",
            task_type="CAUSAL_LM",
        ),
        callbacks=[metrics_callback(metrics_path)],
    )
    started = time.monotonic()
    trainer.train(resume_from_checkpoint=last)
    adapter = save_adapter(trainer.model, tokenizer, settings.model, out_dir)
    record.update(
        status="finished",
        steps=trainer.state.global_step,
        resumed_from=last,
        adapter=str(adapter),
        train_seconds=round(time.monotonic() - started, 1),
        judge_failures=rewards.reward.judge_failures,  # in this process (since a resume)
    )
    write_json(out_dir / SETTINGS_FILE, record)
    plot_rewards(read_metrics(metrics_path), out_dir / "rewards.png")
    return record
