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

import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from tmas.llm.checkpoints import checkpoint_for
from tmas.llm.hf.model_loading import ADAPTER_RECORD, first_line, model_shape, pick_device
from tmas.llm.model_files import ModelFileError
from tmas.training.data_files import read_rows
from tmas.training.grpo_settings import SETTINGS_FILE, GRPOSettings, prepare_output, write_json
from tmas.training.metrics import append_metrics, keep_steps_up_to, plot_rewards, read_metrics
from tmas.training.novelty import NoveltyJudge, load_template
from tmas.training.rewards import HybridReward
from tmas.training.trl_rewards import TRLRewards

INSTALL_HINT = "pip install 'tmas[train]'"


def make_judge(settings: GRPOSettings) -> NoveltyJudge | None:
    """The novelty judge the settings name (None when disabled)."""
    judge = settings.judge
    if not judge.enabled:
        return None
    from tmas.config import TMASConfig
    from tmas.llm.backend import BackendSpec, make_main_model

    spec = BackendSpec(
        kind=judge.backend,  # type: ignore[arg-type]
        model=judge.model or (settings.model if judge.backend == "hf" else None),
        base_url=judge.base_url,
    ).resolved()
    model = make_main_model(spec, TMASConfig(solver_max_tokens=judge.max_tokens, temperature=0))
    return NoveltyJudge(model, load_template(judge.prompt_file), judge.max_tokens)


def load_policy(settings: GRPOSettings) -> tuple[Any, Any, str]:
    """The base model (float32 on CPU), its tokenizer and its checkpoint folder."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:
        raise ModelFileError(f"training needs {exc.name}: {INSTALL_HINT}") from exc
    transformers_logging.disable_progress_bar()  # the weights' loading bar, not training's
    checkpoint = checkpoint_for(settings.model)
    on_cpu = pick_device(settings.device) == "cpu"
    try:
        tokenizer = AutoTokenizer.from_pretrained(checkpoint)
        model = AutoModelForCausalLM.from_pretrained(
            checkpoint, dtype=torch.float32 if on_cpu else "auto"
        )
    except OSError as exc:
        raise ModelFileError(f"cannot load model {settings.model}: {first_line(exc)}") from exc
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer, checkpoint


def trainer_config(settings: GRPOSettings, out_dir: Path, progress: bool, weights: list[float]):
    """TRL's GRPOConfig for ``settings``."""
    from trl import GRPOConfig

    on_cpu = pick_device(settings.device) == "cpu"
    return GRPOConfig(
        output_dir=str(out_dir / "checkpoints"),
        max_steps=settings.steps,
        per_device_train_batch_size=settings.batch_size,
        num_generations=settings.num_generations,
        max_completion_length=settings.max_completion_length,
        learning_rate=settings.learning_rate,
        beta=settings.beta,
        temperature=settings.temperature,
        reward_weights=weights,
        logging_steps=1,
        save_steps=settings.save_every,
        save_total_limit=2,
        seed=settings.seed,
        report_to="none",
        use_cpu=on_cpu,
        bf16=False,
        use_vllm=settings.use_vllm,
        disable_tqdm=not progress,
    )


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
        if (path / "trainer_state.json").is_file():
            return str(path)
        shutil.rmtree(path, ignore_errors=True)
    return None


def save_adapter(model: Any, tokenizer: Any, settings: GRPOSettings, out_dir: Path) -> Path:
    """Write the LoRA adapter and its record (the base it was trained on) to ``out_dir /
    adapter`` through a temporary folder renamed into place."""
    target = out_dir / "adapter"
    work = Path(tempfile.mkdtemp(prefix=".adapter.", dir=out_dir))
    try:
        model.save_pretrained(work)
        tokenizer.save_pretrained(work)
        record = {"base_model": settings.model, "base_shape": model_shape(model.config)}
        write_json(work / ADAPTER_RECORD, record)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def train_grpo(settings: GRPOSettings, out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """Train (or resume training) and return the finished record of ``training.json``.

    ValueError/ModelFileError for bad data, a missing model, or an output folder that cannot
    be written or holds another training; nothing is marked finished unless it finished.

    Example (with ``tmas[train]``)::

        train_grpo(GRPOSettings(data="rows.parquet", steps=3), Path("out"))
    """
    saved = prepare_output(out_dir, settings)
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
    rewards = TRLRewards(HybridReward(settings.weights, judge))
    record = {"settings": settings.model_dump(), "checkpoint": checkpoint, "status": "running"}
    write_json(out_dir / SETTINGS_FILE, {**saved, **record})
    metrics_path = out_dir / "metrics.jsonl"
    last = last_complete_checkpoint(out_dir / "checkpoints")
    keep_steps_up_to(metrics_path, checkpoint_step(last) if last else 0)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=rewards.functions(),
        args=trainer_config(settings, out_dir, progress, rewards.weights()),
        train_dataset=Dataset.from_list(rows),
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
    adapter = save_adapter(trainer.model, tokenizer, settings, out_dir)
    metrics = read_metrics(metrics_path)
    plot_rewards(metrics, out_dir / "rewards.png")
    record.update(
        status="finished",
        steps=trainer.state.global_step,
        resumed_from=last,
        adapter=str(adapter),
        train_seconds=round(time.monotonic() - started, 1),
        judge_failures=rewards.reward.judge_failures,
    )
    write_json(out_dir / SETTINGS_FILE, record)
    return record
