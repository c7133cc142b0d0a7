"""``tmas solve``: run a topology on one problem and print the answer."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tmas.cli.auto_plan import (
    AUTO,
    AllowUnseenOption,
    OrchestratorOption,
    PlansOption,
    PlanSpaceOption,
    RewardModelOption,
    check_auto_options,
    describe_choice,
    make_chooser,
)
from tmas.cli.common import (
    CandidatesOption,
    ConcurrencyOption,
    DbOption,
    GraphOption,
    IterationsOption,
    JsonOption,
    MaxTokensOption,
    MemoryOption,
    PluginOption,
    PromptsOption,
    ProofOption,
    ReviewOption,
    SetOption,
    StreamOption,
    VerificationsOption,
    err,
    error_line,
    fail,
    open_manager,
)
from tmas.cli.endpoints import checked_router
from tmas.cli.inputs import (
    proof_reference,
    read_documents,
    read_problem,
    run_options,
    settings_layers,
    setup_run,
)
from tmas.cli.model_options import ModelOptions, model_options
from tmas.cli.outcome import drive, finish, live_options
from tmas.graphs.run_plan import plan_run
from tmas.llm.model_files import ModelFileError
from tmas.storage.run_registry import new_run_id


@model_options()
def solve(
    problem: Annotated[str, typer.Argument(help="the problem text, or - to read stdin")],
    gold: Annotated[str | None, typer.Option(help="gold answer: report Pass@1")] = None,
    graph: GraphOption = "tmas",
    plans: PlansOption = 4,
    plan_space: PlanSpaceOption = None,
    reward_model: RewardModelOption = None,
    orchestrator: OrchestratorOption = False,
    allow_unseen_plans: AllowUnseenOption = False,
    plugin: PluginOption = [],  # noqa: B006
    prompts: PromptsOption = [],  # noqa: B006
    doc: Annotated[
        list[Path], typer.Option(help="a document for the question (repeatable; delm)")
    ] = [],  # noqa: B006
    n: CandidatesOption = None,
    m: VerificationsOption = None,
    iterations: IterationsOption = None,
    epsilon: float | None = None,
    seed: int | None = None,
    max_tokens: MaxTokensOption = None,
    memory: MemoryOption = None,
    proof: ProofOption = False,
    reference: Annotated[
        Path | None,
        typer.Option(help="proof problems: a file holding a reference proof the judge grades with"),
    ] = None,
    temperature: float | None = None,
    *,
    models: ModelOptions,
    max_concurrency: ConcurrencyOption = None,
    set_values: SetOption = [],  # noqa: B006
    run_id: Annotated[str | None, typer.Option(help="id of the new run (default: random)")] = None,
    db: DbOption = None,
    quiet: Annotated[bool, typer.Option(help="no progress display")] = False,
    stream: StreamOption = False,
    review: ReviewOption = False,
    as_json: JsonOption = False,
) -> None:
    """Run a reasoning topology (TMAS by default) on one problem and print the answer."""
    try:
        text = read_problem(problem)
        documents = read_documents(doc)
        given = run_options(n, m, iterations, epsilon, seed, max_tokens, temperature)
        given["memory"] = memory
        given["proof"] = proof or None
        gold = proof_reference(proof, gold, reference)
        extras = {"--set": set_values, "--prompts": prompts, "--plugin": plugin}
        check_auto_options(graph, given, extras, plan_space, reward_model, orchestrator)
        plan_choice = None
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
            choice = chooser.choose(text)
            plan_choice = choice.record()
            err.print(f"plans scored before running:\n{describe_choice(plan_choice)}", markup=False)
            plugin = list(chooser.space.plugins) if chooser.space else []
            layers = [choice.chosen.config, {"seed": seed or 0, "roles": roles}]
            plan = plan_run(choice.chosen.spec, layers, backend, plugin)
        else:
            layers = settings_layers(given, set_values, roles)
            plan = setup_run(graph, plugin, layers, backend, prompts)
        router = checked_router(plan)
    except (ValueError, ModelFileError) as exc:  # config, spec, backend or its server
        fail(error_line(exc))
        return
    run_id = run_id or new_run_id()
    with open_manager(db, for_writing=True, router_factory=lambda _: router) as manager:
        if manager.registry.exists(run_id):
            fail(f"a run with id {run_id!r} already exists; continue it with: tmas resume {run_id}")
        err.print(f"run {run_id} ({plan.name}, {plan.backend.describe()})", markup=False)
        outcome = drive(
            lambda: manager.start(
                run_id,
                problem=text,
                gold_answer=gold,
                plan=plan,
                documents=documents,
                plan_choice=plan_choice,
                show_progress=not quiet,
                max_concurrency=max_concurrency,
                **live_options(stream, review),
            ),
            run_id,
            manager,
        )
        finish(outcome, as_json)
