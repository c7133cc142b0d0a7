"""``tmas train grpo``: GRPO with LoRA on exported rollouts, scored by the hybrid reward;
``tmas train sft``: rejection-sampling fine-tuning on the verified-correct rollouts;
``tmas train filter``: keep the rows with reward spread; ``tmas train latent``: DiffMAS
training of a chain topology's final agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from tmas.cli.common import err, error_line, fail, out
from tmas.cli.model_options import ModelOptions, model_options, training_options
from tmas.llm.model_files import ModelFileError

train_app = typer.Typer(
    no_args_is_help=True, help="Train agents: the solver on saved runs, a latent final agent."
)


@train_app.command("grpo")
@training_options(
    "model", "adapter", "device",
    model={"help": "base model: smollm2, qwen, a checkpoint or hub id"},
    adapter={"help": "continue this LoRA adapter (a warm start: tmas train sft's)"},
)  # fmt: skip
@model_options(
    "backend", "model", "base_url", into="judge_models", prefix="judge",
    backend={"default": "hf", "help": "llamacpp | openai | hf | vllm"},
    model={"help": "the novelty judge's model (or --judge-self: the base model judges)"},
    base_url={"help": "openai judge endpoint"},
)  # fmt: skip
def grpo(
    data: Annotated[Path, typer.Argument(help="rows from tmas export rollouts (.parquet/.jsonl)")],
    out_dir: Annotated[Path, typer.Option("--out", help="folder for the adapter and metrics")],
    *,
    models: ModelOptions,
    steps: Annotated[int, typer.Option(min=1)] = 50,
    generations: Annotated[int, typer.Option(min=2, help="completions per prompt")] = 4,
    prompts_per_step: Annotated[int, typer.Option(min=1)] = 1,
    max_completion_length: Annotated[int, typer.Option(min=1, help="tokens per completion")] = 128,
    max_prompt_length: Annotated[
        int, typer.Option(min=1, help="longer rows are left out (TRL does not cut prompts)")
    ] = 1024,
    mask_truncated: Annotated[
        bool, typer.Option(help="completions cut by the budget add nothing to the loss")
    ] = True,
    scale_rewards: Annotated[
        str, typer.Option(help="reward normalisation: group | batch | none")
    ] = "group",
    loss_type: Annotated[str, typer.Option(help="TRL's loss: dapo, grpo, dr_grpo, bnpo, ...")] = (
        "dapo"
    ),
    drop_zero_spread: Annotated[
        bool, typer.Option(help="leave groups whose rewards are all equal out of the loss")
    ] = True,
    learning_rate: Annotated[float, typer.Option(min=0.0)] = 5e-5,
    beta: Annotated[float, typer.Option(min=0.0, help="KL coefficient")] = 0.04,
    temperature: Annotated[float, typer.Option(min=0.0)] = 1.0,
    lora_r: Annotated[int, typer.Option(min=1)] = 8,
    lora_alpha: Annotated[int, typer.Option(min=1)] = 16,
    seed: int = 0,
    save_every: Annotated[int, typer.Option(min=1, help="steps between checkpoints")] = 1,
    w_correctness: Annotated[float, typer.Option(min=0.0, help="weight of correctness")] = 1.0,
    w_experience: Annotated[
        float, typer.Option(min=0.0, help="weight of the repair term (exploit rows)")
    ] = 0.5,
    w_novelty: Annotated[float, typer.Option(min=0.0, help="weight of novelty")] = 0.5,
    novelty_needs_correct: Annotated[bool, typer.Option(help="novelty only when correct")] = True,
    judge: Annotated[bool, typer.Option(help="score novelty with a judge model")] = True,
    judge_self: Annotated[
        bool, typer.Option(help="let the base model being trained judge novelty")
    ] = False,
    judge_models: ModelOptions,
    judge_prompt: Annotated[Path | None, typer.Option(help="judge prompt template file")] = None,
    use_vllm: Annotated[bool, typer.Option(help="generate with vLLM (GPU)")] = False,
    quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
) -> None:
    """Train a LoRA adapter with GRPO; rerun the same command to resume after a stop."""
    from tmas.training.data_files import DataFileError
    from tmas.training.grpo import train_grpo
    from tmas.training.grpo_settings import GRPOSettings

    try:
        settings = GRPOSettings(
            data=str(data.resolve()), model=models.model, steps=steps, num_generations=generations,
            init_adapter=str(Path(models.adapter).resolve()) if models.adapter else None,
            prompts_per_step=prompts_per_step, max_completion_length=max_completion_length,
            max_prompt_length=max_prompt_length, mask_truncated_completions=mask_truncated,
            scale_rewards=scale_rewards, loss_type=loss_type, drop_zero_spread=drop_zero_spread,
            learning_rate=learning_rate, beta=beta, temperature=temperature, lora_r=lora_r,
            lora_alpha=lora_alpha, seed=seed, save_every=save_every,
            weights={"correctness": w_correctness, "experience": w_experience,
                     "novelty": w_novelty, "novelty_needs_correct": novelty_needs_correct},
            judge={"enabled": judge, "backend": judge_models.backend, "model": judge_models.model,
                   "base_url": judge_models.base_url, "self_judge": judge_self,
                   "prompt_file": str(judge_prompt.resolve()) if judge_prompt else None},
            use_vllm=use_vllm, device=models.device,
        )  # fmt: skip
        record = train_grpo(settings, out_dir, progress=not quiet)
    except ValidationError as exc:
        fail(error_line(exc))
        return
    except (DataFileError, ModelFileError, ValueError, OSError) as exc:
        fail(error_line(exc))
        return
    err.print(f"adapter: {record['adapter']} ({record['steps']} steps)", markup=False)
    shown = (
        "status",
        "steps",
        "adapter",
        "dropped_zero_spread_groups",
        "excluded_completions",
        "spread",
    )
    out.print(json.dumps({k: record[k] for k in shown}), markup=False, soft_wrap=True)


@train_app.command("sft")
@training_options(
    "model", "adapter", "device", adapter={"help": "continue this LoRA adapter, not a new one"}
)
def sft(
    data: Annotated[Path, typer.Argument(help="rows from tmas export rollouts (.parquet/.jsonl)")],
    out_dir: Annotated[Path, typer.Option("--out", help="folder for the adapter and metrics")],
    *,
    models: ModelOptions,
    steps: Annotated[int, typer.Option(min=1)] = 20,
    batch_size: Annotated[int, typer.Option(min=1, help="responses per step")] = 2,
    learning_rate: Annotated[float, typer.Option(min=0.0)] = 1e-4,
    lora_r: Annotated[int, typer.Option(min=1)] = 8,
    lora_alpha: Annotated[int, typer.Option(min=1)] = 16,
    max_per_problem: Annotated[
        int | None, typer.Option(min=1, help="verified responses kept per problem")
    ] = 4,
    max_target_tokens: Annotated[int, typer.Option(min=1, help="longer responses left out")] = 256,
    seed: int = 0,
    save_every: Annotated[int, typer.Option(min=1, help="steps between checkpoints")] = 5,
    quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
) -> None:
    """Rejection-sampling fine-tuning: a LoRA adapter learns the solver's own verified-correct
    responses to the prompts it was sent; rerun to resume."""
    from tmas.training.data_files import DataFileError
    from tmas.training.rejection_sft import SFTSettings, train_sft

    try:
        settings = SFTSettings(
            data=str(data.resolve()), model=models.model, steps=steps, batch_size=batch_size,
            init_adapter=str(Path(models.adapter).resolve()) if models.adapter else None,
            learning_rate=learning_rate, lora_r=lora_r, lora_alpha=lora_alpha,
            max_per_problem=max_per_problem, max_target_tokens=max_target_tokens, seed=seed,
            save_every=save_every, device=models.device,
        )  # fmt: skip
        record = train_sft(settings, out_dir, progress=not quiet)
    except (ValidationError, DataFileError, ModelFileError, ValueError, OSError) as exc:
        fail(error_line(exc))
        return
    err.print(f"adapter: {record['adapter']} ({record['steps']} steps)", markup=False)
    shown = ("status", "steps", "adapter", "rows", "loss_before", "loss_after")
    out.print(json.dumps({k: record[k] for k in shown}), markup=False, soft_wrap=True)


@train_app.command("filter")
@training_options("model", "adapter", "device")
def filter_rows(
    data: Annotated[Path, typer.Argument(help="rows from tmas export rollouts (.parquet/.jsonl)")],
    out_path: Annotated[Path, typer.Option("--out", help="the rows kept (.parquet/.jsonl)")],
    *,
    models: ModelOptions,
    samples: Annotated[int, typer.Option("-k", "--samples", min=2, help="completions per row")] = 8,
    max_completion_length: Annotated[int, typer.Option(min=1, help="tokens per completion")] = 128,
    temperature: Annotated[float, typer.Option(min=0.0)] = 1.0,
    seed: int = 0,
    quiet: Annotated[bool, typer.Option(help="no progress lines")] = False,
) -> None:
    """Keep the rows the policy solves sometimes but not always (0 < pass rate < 1), sampled
    under the training prompt, budget and temperature; print the distribution."""
    from tmas.training.data_files import DataFileError, check_suffix, read_rows, write_rows
    from tmas.training.spread_filter import FilterSettings, policy_sampler, spread_rows

    try:
        check_suffix(out_path)
        settings = FilterSettings(
            model=models.model, adapter=models.adapter, samples=samples, seed=seed,
            max_completion_length=max_completion_length, temperature=temperature,
            device=models.device,
        )  # fmt: skip
        rows = read_rows(data)

        def show(done: int, total: int) -> None:
            if not quiet:
                err.print(f"sampled {done}/{total} row(s)", markup=False)

        sampler = policy_sampler(settings)
        report = spread_rows(rows, sampler, samples, settings.rows_per_batch, progress=show)
        if not report.kept:
            fail(f"no row has reward spread ({json.dumps(report.summary())}); nothing written")
            return
        write_rows(report.kept, out_path)
    except (ValidationError, DataFileError, ModelFileError, ValueError, OSError) as exc:
        fail(error_line(exc))
        return
    summary = report.summary()
    for correct, count in summary["histogram"].items():
        err.print(f"{correct}/{samples} correct: {count} row(s)", markup=False)
    out.print(json.dumps(summary), markup=False, soft_wrap=True)


@train_app.command("latent")
@training_options()
def latent(
    data: Annotated[
        str, typer.Argument(help="problems (JSONL, gsm8k, math500) or exported run rows")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="folder for the adapter and metrics")],
    graph: Annotated[
        str, typer.Option(help="the chain topology, latent or text (bundled or spec file)")
    ] = "latent_mas",
    limit: Annotated[int | None, typer.Option(min=1, help="first N problems")] = None,
    *,
    models: ModelOptions,
    steps: Annotated[int, typer.Option(min=1)] = 20,
    batch_size: Annotated[int, typer.Option(min=1, help="problems per step")] = 2,
    learning_rate: Annotated[float, typer.Option(min=0.0)] = 2e-4,
    lora_r: Annotated[int, typer.Option(min=1)] = 8,
    lora_alpha: Annotated[int, typer.Option(min=1)] = 16,
    max_target_tokens: Annotated[int, typer.Option(min=1, help="longest target")] = 256,
    notes_max_tokens: Annotated[
        int | None, typer.Option(min=1, help="text chains: longest note (default: the role's)")
    ] = None,
    seed: int = 0,
    save_every: Annotated[int, typer.Option(min=1, help="steps between checkpoints")] = 5,
    quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
) -> None:
    """Train the final agent of a chain topology on the latent traces (or, text_mas, the
    notes) its upstream agents build (DiffMAS: stage I without gradients, stage II LoRA SFT);
    rerun to resume."""
    from tmas.training.latent_settings import LatentSFTSettings
    from tmas.training.latent_sft import train_latent

    source = str(Path(data).resolve()) if Path(data).exists() else data
    try:
        settings = LatentSFTSettings(
            data=source, limit=limit, graph=graph, model=models.model, steps=steps,
            batch_size=batch_size, learning_rate=learning_rate, lora_r=lora_r,
            lora_alpha=lora_alpha, max_target_tokens=max_target_tokens,
            notes_max_tokens=notes_max_tokens, seed=seed,
            save_every=save_every, device=models.device,
        )  # fmt: skip
        record = train_latent(settings, out_dir, progress=not quiet)
    except (ValidationError, ModelFileError, ValueError, OSError) as exc:  # data, spec: ValueError
        fail(error_line(exc))
        return
    err.print(f"adapter: {record['adapter']} ({record['steps']} steps)", markup=False)
    shown = ("status", "steps", "adapter", "loss_before", "loss_after")
    out.print(json.dumps({k: record[k] for k in shown}), markup=False, soft_wrap=True)
