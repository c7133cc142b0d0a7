"""A run's plan for the terminal: backend and sizes, the binding of every role, the roles and
prompts its topology declared, its channels and plugins, and the templates it rendered."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tmas.graphs.contract_checks import contract_problems
from tmas.graphs.run_plan import RunPlan

VALUE_CHARS = 120


def binding_lines(plan: RunPlan) -> list[str]:
    """One line per role: the model its calls use, its budget and temperature, and the role
    whose model it borrows.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.graphs.run_plan import plan_run
        >>> from tmas.llm.backend import BackendSpec
        >>> plan = plan_run(load_bundled("tmas"), {"verifier_max_tokens": 64},
        ...                 BackendSpec(model="smollm2"))
        >>> binding_lines(plan)[1]
        '  verifier     llamacpp:smollm2  max 64 tokens, temperature 0.7'
    """
    width = max((len(role) for role in plan.bindings), default=0)
    lines = []
    for role, binding in plan.bindings.items():
        temperature = "default" if binding.temperature is None else f"{binding.temperature:g}"
        borrowed = f", model of {binding.model_of}" if binding.model_of else ""
        lines.append(f"  {role:<{width}}  {binding.describe()}  max {binding.max_tokens} "
                     f"tokens, temperature {temperature}{borrowed}")  # fmt: skip
    return lines


def plan_lines(plan: RunPlan) -> list[str]:
    """Lines describing a run's plan: its digest, backend and sizes, each role's binding, the
    roles its topology declared, the prompts it overrode, its channels and its plugins.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.graphs.run_plan import plan_run
        >>> from tmas.llm.backend import BackendSpec
        >>> lines = plan_lines(plan_run(load_bundled("self_refine"), None,
        ...                             BackendSpec(model="smollm2")))
        >>> lines[1]
        'roles (model, answer budget, temperature):'
        >>> lines[-1]
        'declared: critic (max 256 tokens, model of solver)'
    """
    config = plan.config
    sizes = f"N={config.n_candidates} M={config.n_verifications} T={config.max_iterations}"
    lines = [f"plan {plan.digest()}: {plan.backend.describe()}, {sizes}, seed {config.seed}"]
    lines += ["roles (model, answer budget, temperature):", *binding_lines(plan)]
    if plan.channels:
        described = [f"{name} ({c['reducer']})" for name, c in plan.channels.items()]
        lines.append("channels: " + ", ".join(described))
    if plan.plugins:
        described = [f"{p.module} (sha256 {p.sha256 or '?'})" for p in plan.plugins]
        lines.append("plugins: " + ", ".join(described))
    if plan.topology.prompts:
        lines.append("prompts overridden: " + ", ".join(sorted(plan.topology.prompts)))
    if plan.topology.roles:
        declared = [
            f"{name} (max {role.max_tokens} tokens"
            + (f", model of {role.model_of})" if role.model_of else ")")
            for name, role in plan.topology.roles.items()
        ]
        lines.append("declared: " + ", ".join(declared))
    return lines


def rendered_templates(plan: RunPlan) -> list[str]:
    """The keys of the templates a run's nodes render (its pipelines' included), in order.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.graphs.run_plan import plan_run
        >>> from tmas.llm.backend import BackendSpec
        >>> keys = rendered_templates(plan_run(load_bundled("majority_vote"), None,
        ...                                    BackendSpec(model="smollm2")))
        >>> "solver/system" in keys and "verifier/user" not in keys
        True
    """
    report = contract_problems(plan.topology, plan.prompts, plan.channels)
    return sorted(report.rendered)


def prompt_lines(plan: RunPlan) -> list[str]:
    """Every template the run rendered, whole, each under its key (overrides marked).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.graphs.run_plan import plan_run
        >>> from tmas.llm.backend import BackendSpec
        >>> spec = load_bundled("majority_vote").with_prompts({"solver/system": "Be brief."})
        >>> lines = prompt_lines(plan_run(spec, None, BackendSpec(model="smollm2")))
        >>> lines[lines.index("--- solver/system (overridden)") + 1]
        'Be brief.'
    """
    lines = []
    for key in rendered_templates(plan):
        mark = " (overridden)" if key in plan.topology.prompts else ""
        lines += [f"--- {key}{mark}", plan.prompts[key]]
    return lines


def state_lines(plan: RunPlan, state: Mapping[str, Any]) -> list[str]:
    """Why the run stopped (or that it has not) and the value of each of its channels.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.graphs.run_plan import plan_run
        >>> from tmas.llm.backend import BackendSpec
        >>> plan = plan_run(load_bundled("tmas"), None, BackendSpec(model="smollm2"))
        >>> state_lines(plan, {"stop_reason": "consensus", "extras": {"note": "ok"}})
        ['stopped: consensus', 'channel extras: {"note": "ok"}']
    """
    stop = state.get("stop_reason")
    lines = [f"stopped: {stop}" if stop else "stopped: not yet (resume to go on)"]
    for name in plan.channels:
        text = json.dumps(state.get(name), ensure_ascii=False, default=str)
        shown = text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 3] + "..."
        lines.append(f"channel {name}: {shown}")
    return lines
