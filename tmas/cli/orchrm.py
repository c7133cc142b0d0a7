"""``tmas orchrm pairs | train | score``: plan pairs from saved evaluations, a Bradley-Terry
plan reward model trained on them, and a ranking of plans for a problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from tmas.cli.common import DbOption, err, error_line, fail, out
from tmas.cli.inputs import read_problem
from tmas.cli.model_options import ModelOptions, training_options
from tmas.config import ConfigError
from tmas.llm.model_files import ModelFileError
from tmas.orchrm.pairs import PairsError, build_pairs
from tmas.orchrm.plans import PlanError
from tmas.orchrm.reward_model import RewardModelError
from tmas.orchrm.rm_settings import DEFAULT_LEARNING_RATE
from tmas.training.data_files import replace_atomically

orchrm_app = typer.Typer(
    no_args_is_help=True, help="Plan reward modelling: choose the plan before running it."
)


@orchrm_app.command("pairs")
def pairs(
    folders: Annotated[
        list[Path], typer.Argument(help="evaluation folders; several of one plan are its runs")
    ],
    out_path: Annotated[Path, typer.Option("--out", help="pairs.jsonl (training problems)")],
    success_margin: Annotated[
        float,
        typer.Option(min=0.01, max=1.0, help="how much higher a winner's success rate must be"),
    ] = 0.5,
    held_out: Annotated[
        float, typer.Option(min=0.0, max=0.9, help="share of problems held out before pairing")
    ] = 0.25,
    held_out_path: Annotated[
        Path | None,
        typer.Option("--held-out-out", help="held-out pairs (default: OUT.held_out.jsonl)"),
    ] = None,
    seed: Annotated[int, typer.Option(help="which problems are held out")] = 0,
    cheaper: Annotated[
        bool, typer.Option(help="also: of two plans right about as often, the cheaper wins")
    ] = False,
    cost_tolerance: Annotated[
        float,
        typer.Option(
            min=0.0, max=0.99, help="--cheaper: how much lower its success rate may be (0: none)"
        ),
    ] = 0.0,
    margin: Annotated[
        float, typer.Option(min=0.0, max=0.99, help="how much cheaper (share of tokens)")
    ] = 0.1,
    db: DbOption = None,
) -> None:
    """Win/lose plan pairs (OrchRM's input, chosen, rejected, source) from saved evaluations
    of several plans on the same problems and models: a plan wins where its success rate over
    its runs is higher by --success-margin; problems are split into training and held-out
    ones first."""
    held_out_path = held_out_path or out_path.with_suffix(".held_out.jsonl")
    for path in (out_path, held_out_path):
        if path.suffix != ".jsonl":
            fail(f"{path}: write pairs to a .jsonl file")
    try:
        found = build_pairs(
            folders, cheaper, margin, db, success_margin=success_margin,
            cost_tolerance=cost_tolerance, held_out=held_out, seed=seed,
        )  # fmt: skip
    except PairsError as exc:
        fail(str(exc))
        return
    if not found.train:
        fail(f"no pairs: no training problem has plans whose success rates differ by "
             f"{success_margin} ({json.dumps(found.report)})", 1)  # fmt: skip
    for path, rows in ((out_path, found.train), (held_out_path, found.held_out)):
        if not rows:  # no held-out pairs: no file, and none left from an earlier run
            path.unlink(missing_ok=True)
            err.print(f"0 pairs: {path} not written", markup=False)
            continue
        text = "".join(json.dumps(row) + "\n" for row in rows)
        try:
            replace_atomically(path, lambda temporary, text=text: temporary.write_text(text))
        except OSError as exc:
            fail(f"cannot write {path}: {exc.strerror or exc}")
        err.print(f"{len(rows)} pairs -> {path}", markup=False)
    out.print(json.dumps(found.report), markup=False, soft_wrap=True)


@orchrm_app.command("train")
@training_options()
def train(
    pairs_path: Annotated[Path, typer.Argument(help="pairs.jsonl from tmas orchrm pairs")],
    out_dir: Annotated[Path, typer.Option("--out", help="folder for the reward model")],
    eval_pairs: Annotated[Path | None, typer.Option(help="held-out pairs file")] = None,
    eval_fraction: Annotated[
        float, typer.Option(min=0.0, max=0.9, help="share of problems held out")
    ] = 0.2,
    *,
    models: ModelOptions,
    epochs: Annotated[int, typer.Option(min=1)] = 3,
    batch_size: Annotated[int, typer.Option(min=1, help="pairs per step")] = 8,
    learning_rate: Annotated[float, typer.Option(min=0.0)] = DEFAULT_LEARNING_RATE,
    lora_r: Annotated[int, typer.Option(min=1)] = 16,
    lora_alpha: Annotated[int, typer.Option(min=1)] = 32,
    max_length: Annotated[int, typer.Option(min=64, help="tokens of problem and plan")] = 1024,
    seed: int = 0,
    save_every: Annotated[int, typer.Option(min=1, help="steps between checkpoints")] = 10,
    quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
) -> None:
    """Train the plan reward model (Bradley-Terry loss, LoRA and a score head); rerun the same
    command to resume after a stop."""
    from tmas.orchrm.rm_settings import RewardModelSettings
    from tmas.orchrm.rm_training import train_reward_model

    try:
        settings = RewardModelSettings(
            pairs=str(pairs_path.resolve()),
            eval_pairs=str(eval_pairs.resolve()) if eval_pairs else None,
            eval_fraction=eval_fraction, model=models.model, epochs=epochs,
            batch_size=batch_size, learning_rate=learning_rate, lora_r=lora_r,
            lora_alpha=lora_alpha, max_length=max_length, seed=seed, save_every=save_every,
            device=models.device,
        )  # fmt: skip
        record = train_reward_model(settings, out_dir, progress=not quiet)
    except (ValidationError, PairsError, ModelFileError, ValueError, OSError) as exc:
        fail(error_line(exc))
        return
    accuracy = record["pairwise_accuracy"]
    err.print(f"reward model: {record['adapter']} ({record['steps']} steps)", markup=False)
    out.print(
        json.dumps({"status": record["status"], "steps": record["steps"],
                    "adapter": record["adapter"], "pairwise_accuracy": accuracy}),
        markup=False,
    )  # fmt: skip


@orchrm_app.command("score")
@training_options("device")
def score(
    problem: Annotated[str, typer.Argument(help="the problem text, or - to read stdin")],
    reward_model: Annotated[Path, typer.Option(help="the reward model folder")],
    plan_space: Annotated[Path, typer.Option(help="plan space YAML")],
    allow_unseen_plans: Annotated[
        bool, typer.Option(help="score plans the reward model was not trained on")
    ] = False,
    *,
    models: ModelOptions,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Rank every plan of a plan space for a problem by its reward-model score (nothing runs)."""
    from tmas.orchrm.choice import PlanChooser
    from tmas.orchrm.plan_space import load_plan_space

    try:
        text = read_problem(problem)
        space = load_plan_space(plan_space)
        chooser = PlanChooser(
            str(reward_model), k=len(space.plans), space=space,
            allow_unseen=allow_unseen_plans, device=models.device,
        )  # fmt: skip
        choice = chooser.choose(text)
    except (ConfigError, PlanError, RewardModelError, ModelFileError) as exc:
        fail(error_line(exc))
        return
    ranked = sorted(choice.candidates, key=lambda c: -(c.score or 0.0))
    if as_json:
        out.print(
            json.dumps([{"plan": c.name, "score": c.score} for c in ranked]),
            markup=False,
            soft_wrap=True,
        )
        return
    for rank, candidate in enumerate(ranked, start=1):
        out.print(f"{rank}. {candidate.score:+.4f}  {candidate.name}", markup=False)
