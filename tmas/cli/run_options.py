"""The options that say what a run is (``tmas solve``, ``tmas eval``) and those of ``--graph
auto``, each declared once as an option group (:mod:`tmas.cli.option_group`), and the one
function that turns them with the model options into a run's plan
(:func:`planned_run`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tmas.cli.auto_plan import AUTO, check_auto_options, describe_choice, make_chooser
from tmas.cli.common import MEMORY_HELP, PLUGIN_HELP, SET_HELP
from tmas.cli.inputs import settings_layers, setup_run
from tmas.cli.model_options import ModelOptions
from tmas.cli.option_group import option, option_group
from tmas.graphs.run_plan import RunPlan, plan_run

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


@dataclass(frozen=True)
class RunOptions:
    """What a run is: its topology, plugins, prompt overrides and settings, as parsed.

    Example:
        >>> RunOptions(n=2, max_tokens=64).settings()
        {'n_candidates': 2, 'solver_max_tokens': 64}
    """

    graph: str = option(
        "tmas", help="bundled topology name, spec file, or auto (a plan reward model picks)"
    )
    plugin: tuple[str, ...] = option((), help=PLUGIN_HELP)
    prompts: tuple[Path, ...] = option(
        (),
        "--prompts",
        help="a YAML/JSON file of prompt templates (group/name: text) overriding the "
        "topology's (repeatable; saved with the run)",
    )
    n: int | None = option(None, "-n", "--candidates", help="N solutions")
    m: int | None = option(None, "-m", "--verifications", help="M checks")
    iterations: int | None = option(None, "-t", "--iterations")
    epsilon: float | None = option(None)
    seed: int | None = option(None)
    max_tokens: int | None = option(None, help="solver answer length limit")
    temperature: float | None = option(None)
    memory: str | None = option(None, help=MEMORY_HELP)
    proof: bool = option(
        False,
        "--proof",
        help="proof problems: no answer to vote on; the best-verified proof is the result "
        "(docs/proofs.md)",
    )
    set_values: tuple[str, ...] = option((), "--set", help=SET_HELP)

    def settings(self) -> dict[str, Any]:
        """The config fields these options set (``--max-tokens`` is the solver's budget)."""
        named = {
            "n_candidates": self.n,
            "n_verifications": self.m,
            "max_iterations": self.iterations,
            "epsilon": self.epsilon,
            "seed": self.seed,
            "solver_max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "memory": self.memory,
            "proof": self.proof or None,
        }
        return {key: value for key, value in named.items() if value is not None}


@dataclass(frozen=True)
class AutoPlanOptions:
    """``--graph auto``: where candidate plans come from and the reward model that scores them.

    Example:
        >>> AutoPlanOptions().plans
        4
    """

    plans: int = option(
        4, "--plans", min=1, help="--graph auto: candidate plans scored per problem"
    )
    plan_space: Path | None = option(
        None, help="--graph auto: the plan space YAML the plans come from"
    )
    reward_model: Path | None = option(
        None, help="--graph auto: the plan reward model (tmas orchrm train)"
    )
    orchestrator: bool = option(
        False, help="--graph auto: the run's model writes the candidate plans"
    )
    allow_unseen_plans: bool = option(
        False, help="--graph auto: score plans the reward model was not trained on"
    )


def run_options(*names: str, into: str = "run", **changes: Any) -> Decorator:
    """A decorator giving a command the run options (all, or ``names``) in the place of its
    parameter ``into`` (:func:`tmas.cli.option_group.option_group`).

    Example:
        >>> @run_options("n", "seed")
        ... def check(*, run: RunOptions) -> RunOptions:
        ...     return run
        >>> check(n=3).n, check().graph
        (3, 'tmas')
    """
    return option_group(RunOptions, names, into=into, changes=changes)


def auto_plan_options(into: str = "auto") -> Decorator:
    """A decorator giving a command the ``--graph auto`` options as one :class:`AutoPlanOptions`.

    Example:
        >>> @auto_plan_options()
        ... def check(*, auto: AutoPlanOptions) -> AutoPlanOptions:
        ...     return auto
        >>> check(plans=2).plans
        2
    """
    return option_group(AutoPlanOptions, (), into=into)


@dataclass(frozen=True)
class PlannedRun:
    """A run's plan from the command line; under ``--graph auto`` also the chooser and (for a
    problem given) the record of its choice."""

    plan: RunPlan
    chooser: Any = None
    plan_choice: dict[str, Any] | None = None


def planned_run(
    run: RunOptions, auto: AutoPlanOptions, models: ModelOptions, problem: str | None = None
) -> PlannedRun:
    """The one way the command line turns its options into a run's plan: the topology with its
    plugins and prompt files, the settings (``--role-model`` and ``--role-base-url``, then the
    options with ``--set``) and the backend. Under ``--graph auto`` the plan reward model picks
    the plan (for ``problem``; without one, as an evaluation does per problem, the plan stands
    for the run's backend, seed and role settings). Raises on any bad value, before anything
    is saved.

    Example:
        >>> planned = planned_run(RunOptions(graph="majority_vote", n=3), AutoPlanOptions(),
        ...                       ModelOptions(model="smollm2"))
        >>> planned.plan.name, planned.plan.config.n_candidates, planned.chooser
        ('majority_vote', 3, None)
    """
    extras = {"--set": run.set_values, "--prompts": run.prompts, "--plugin": run.plugin}
    check_auto_options(run.graph, run.settings(), extras, auto.plan_space, auto.reward_model,
                       auto.orchestrator)  # fmt: skip
    backend, roles = models.backend_spec(), models.role_settings()
    if run.graph != AUTO:
        layers = settings_layers(run.settings(), list(run.set_values), roles)
        plan = setup_run(run.graph, list(run.plugin), layers, backend, list(run.prompts))
        return PlannedRun(plan)
    chooser = make_chooser(
        auto.plan_space,
        auto.reward_model,
        auto.plans,  # type: ignore[arg-type]
        auto.orchestrator,
        auto.allow_unseen_plans,
        backend,
        run.seed or 0,
    )
    plugins = list(chooser.space.plugins) if chooser.space else []
    given = {"seed": run.seed or 0, "roles": roles}
    if problem is None:
        from tmas.graphs.bundled import load_bundled

        first = chooser.space.plans[0].spec if chooser.space else load_bundled("tmas")
        return PlannedRun(plan_run(first, given, backend, plugins), chooser)
    choice = chooser.choose(problem)
    plan = plan_run(choice.chosen.spec, [choice.chosen.config, given], backend, plugins)
    return PlannedRun(plan, chooser, choice.record())


def choice_lines(planned: PlannedRun) -> str | None:
    """What a ``--graph auto`` run prints before it runs: each candidate plan's score.

    Example:
        >>> choice_lines(PlannedRun(plan=None)) is None
        True
    """
    if planned.plan_choice is None:
        return None
    return f"plans scored before running:\n{describe_choice(planned.plan_choice)}"
