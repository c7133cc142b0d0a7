"""``tmas eval``: a topology over a data set, one saved run per problem, resumable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from tmas.cli.auto_plan import (
    AUTO,
    AllowUnseenOption,
    OrchestratorOption,
    PlansOption,
    PlanSpaceOption,
    RewardModelOption,
    check_auto_options,
    make_chooser,
)
from tmas.cli.common import (
    CandidatesOption,
    ConcurrencyOption,
    DbOption,
    GraphOption,
    IterationsOption,
    MaxTokensOption,
    MemoryOption,
    PluginOption,
    PromptsOption,
    ProofOption,
    SetOption,
    VerificationsOption,
    check_database,
    err,
    error_line,
    fail,
    out,
)
from tmas.cli.endpoints import checked_router
from tmas.cli.inputs import load_topology, run_options, settings_layers, setup_run
from tmas.cli.model_options import ModelOptions, model_options
from tmas.cli.outcome import DEGRADED_EXIT
from tmas.eval.data import load_problems
from tmas.eval.evaluation import Evaluation, EvaluationStopped
from tmas.eval.results import role_counts, summary_table
from tmas.graphs.run_plan import plan_run
from tmas.llm.model_files import ModelFileError
from tmas.storage.sqlite import StorageError, default_db_path
from tmas.terminal import plain


class ProblemProgress:
    """One line per finished problem with the running accuracy and tokens."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total, self.quiet = total, quiet
        self.done = self.correct = self.tokens = 0

    def __call__(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.correct += int(row["correct"])
        self.tokens += row["tokens_in"] + row["tokens_out"]
        if not self.quiet:
            answer = row["selected_answer"]
            shown = repr(answer if answer is None else plain(answer, 40))
            err.print(
                f"[{self.done}/{self.total}] {plain(row['id'], 60)}: {row['status']}, answer "
                f"{shown} ({'right' if row['correct'] else 'wrong'}) | "
                f"accuracy {self.correct / self.done:.1%} | tokens {self.tokens:,}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )


@model_options()
def evaluate(
    out_dir: Annotated[Path, typer.Option("--out", help="folder for results.jsonl, summary.json")],
    data: Annotated[str, typer.Option(help="JSONL/CSV/parquet file, or gsm8k / math500")] = "gsm8k",
    limit: Annotated[int | None, typer.Option(min=1, help="first K problems only")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="problems at once")] = 1,
    graph: GraphOption = "tmas",
    plans: PlansOption = 4,
    plan_space: PlanSpaceOption = None,
    reward_model: RewardModelOption = None,
    orchestrator: OrchestratorOption = False,
    allow_unseen_plans: AllowUnseenOption = False,
    plugin: PluginOption = [],  # noqa: B006
    prompts: PromptsOption = [],  # noqa: B006
    n: CandidatesOption = None,
    m: VerificationsOption = None,
    iterations: IterationsOption = None,
    epsilon: float | None = None,
    seed: int | None = None,
    max_tokens: MaxTokensOption = None,
    memory: MemoryOption = None,
    proof: ProofOption = False,
    temperature: float | None = None,
    *,
    models: ModelOptions,
    max_concurrency: ConcurrencyOption = None,
    set_values: SetOption = [],  # noqa: B006
    db: DbOption = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS",
            help="run problems as Ray tasks on this cluster (host:port, auto; local starts one)",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option(help="no per-problem lines")] = False,
) -> None:
    """Evaluate a topology on a data set; rerun the same command to finish an interrupted one."""
    try:
        problems = load_problems(data, limit, proof=proof)
        given = run_options(n, m, iterations, epsilon, seed, max_tokens, temperature)
        given["memory"] = memory
        given["proof"] = proof or None
        extras = {"--set": set_values, "--prompts": prompts, "--plugin": plugin}
        check_auto_options(graph, given, extras, plan_space, reward_model, orchestrator)
        chooser = None
        roles = models.role_settings()
        backend = models.backend_spec()
        if graph == AUTO:
            chooser = make_chooser(
                plan_space,
                reward_model,
                plans,
                orchestrator,
                allow_unseen_plans,
                backend,
                seed or 0,
            )  # type: ignore[arg-type]
            topology = chooser.space.plans[0].spec if chooser.space else load_topology("tmas", [])
            plugin = list(chooser.space.plugins) if chooser.space else []
            plan = plan_run(topology, {"seed": seed or 0, "roles": roles}, backend, plugin)
        else:
            layers = settings_layers(given, set_values, roles)
            plan = setup_run(graph, plugin, layers, backend, prompts)
        router = None if ray else checked_router(plan)  # Ray: their own
    except (ValueError, ModelFileError) as exc:  # data, config, spec, backend or its server
        fail(error_line(exc))
        return
    check_database(db)
    progress = ProblemProgress(len(problems), quiet)
    evaluation = Evaluation(
        problems=problems,
        plan=plan,
        router=router,
        db=db or default_db_path(),
        out_dir=out_dir,
        concurrency=concurrency,
        max_concurrency=max_concurrency,
        ray_address=ray,
        on_row=progress,
        chooser=chooser,
    )
    try:
        summary = evaluation.run()
    except (StorageError, ValueError) as exc:  # database, other settings, or the Ray cluster
        fail(str(exc))
        return
    except EvaluationStopped as exc:  # a key, a model name or a context size to fix
        fail(str(exc), 1)
        return
    title = "auto (plan reward model)" if chooser is not None else plan.name
    out.print(summary_table(summary, f"{title} on {data} ({plan.backend.describe()})"))
    out.print(f"results: {out_dir / 'results.jsonl'}", markup=False)
    if summary["failed"]:
        fail(f"{summary['failed']} problem(s) failed; rerun the same command to retry them", 1)
    if summary["degraded"]:
        lost = role_counts(summary["failed_calls_by_role"])
        fail(
            f"{summary['degraded']} problem(s) finished degraded (a role lost every call; "
            f"failed calls {lost}); the results table counts them",
            DEGRADED_EXIT,
        )
