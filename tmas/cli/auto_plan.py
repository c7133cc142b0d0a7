"""``--graph auto``: checking its options (declared in :mod:`tmas.cli.run_options`), making
the plan chooser they describe and showing its choice; shared by ``tmas solve`` and ``tmas
eval``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tmas.config import ConfigError
from tmas.llm.backend import BackendSpec

AUTO = "auto"


def check_auto_options(
    graph: str,
    given: dict[str, Any],
    extras: dict[str, Any],
    plan_space: Path | None,
    reward_model: Path | None,
    orchestrator: bool,
) -> None:
    """Refuse auto options without ``--graph auto``, and, with it, options that would change the
    chosen plan's settings after it was scored (only ``--seed`` may be given).

    Example:
        >>> check_auto_options("auto", {"n_candidates": 4}, {}, Path("p.yaml"), Path("rm"), False)
        Traceback (most recent call last):
        ...
        tmas.config.ConfigError: --graph auto runs the chosen plan with its own settings; ...
    """
    if graph != AUTO:
        if plan_space or reward_model or orchestrator:
            raise ConfigError("--plan-space, --reward-model and --orchestrator need --graph auto")
        return
    changed = [k for k, v in given.items() if v is not None and k != "seed"]
    changed += [k for k, v in extras.items() if v]
    if changed:
        raise ConfigError(
            "--graph auto runs the chosen plan with its own settings; put "
            f"{', '.join(changed)} in the plan space instead"
        )
    if reward_model is None:
        raise ConfigError("--graph auto needs --reward-model DIR (train one: tmas orchrm train)")
    if (plan_space is None) == (not orchestrator):
        raise ConfigError("--graph auto takes its plans from --plan-space FILE or --orchestrator")


def make_chooser(
    plan_space: Path | None,
    reward_model: Path,
    plans: int,
    orchestrator: bool,
    allow_unseen: bool,
    backend: BackendSpec,
    seed: int,
    device: str | None = None,
):
    """The plan chooser the options describe (PlanError/RewardModelError when they cannot
    work): candidates from the plan space, or written by the run's own model."""
    from tmas.llm.backend import make_chat_model
    from tmas.nodes.prompts import PromptSet
    from tmas.orchrm.choice import PlanChooser
    from tmas.orchrm.orchestrator import Orchestrator
    from tmas.orchrm.plan_space import load_plan_space

    space = load_plan_space(plan_space) if plan_space is not None else None
    writer = None
    if orchestrator:
        from tmas.graphs.bundled import bundled_names, load_bundled
        from tmas.graphs.traits import spec_needs_internals

        model = make_chat_model(backend, max_tokens=Orchestrator.max_tokens, temperature=0.7,
                                seed=seed)  # fmt: skip
        topologies = [  # delm needs documents; latent topologies an in-process model
            name
            for name in bundled_names()
            if name != "delm"
            and (backend.kind == "hf" or not spec_needs_internals(load_bundled(name)))
        ]
        writer = Orchestrator(model, topologies, PromptSet())
    return PlanChooser(
        str(reward_model), k=plans, space=space, orchestrator=writer,
        allow_unseen=allow_unseen or orchestrator, seed=seed, device=device,
    )  # fmt: skip


def describe_choice(record: dict[str, Any]) -> str:
    """One line per candidate: the chosen one marked, each score, rejected ones with reasons.

    Example:
        >>> print(describe_choice({"chosen": "a", "candidates": [
        ...     {"name": "a", "score": 1.0, "rejected": None},
        ...     {"name": "b", "score": None, "rejected": "not YAML"}]}))
        * a  +1.0000
          b  rejected: not YAML
    """
    lines = []
    for candidate in record["candidates"]:
        mark = "*" if candidate["name"] == record["chosen"] else " "
        shown = (
            f"rejected: {candidate['rejected']}"
            if candidate["score"] is None
            else f"{candidate['score']:+.4f}"
        )
        lines.append(f"{mark} {candidate['name']}  {shown}")
    return "\n".join(lines)
