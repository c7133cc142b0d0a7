"""A plan space: the plans a choice is made among, declared in YAML as a list, a grid, or both.

::

    name: gsm8k-cheap                    # optional label
    plugins: [my_plugin]                 # optional: imported before the topologies load
    plans:
      - {name: cot, graph: majority_vote, settings: {n_candidates: 1}}
      - {graph: self_refine, settings: {n_candidates: 1, max_iterations: 2}}
    grid:                                # every topology with every combination of values
      graph: [majority_vote, pacore]
      settings: {n_candidates: [2, 4]}

``graph`` is a bundled topology or a spec file (relative to the plan-space file). A plan without
a name is called after its topology and settings (``majority_vote[n_candidates=2]``). Every plan
is validated (spec and settings) when the space loads; the same plan twice is refused.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tmas.config import ConfigError
from tmas.graphs.spec import SpecError, read_data_file
from tmas.orchrm.plans import Plan, PlanError, make_plan


@dataclass(frozen=True)
class PlanSpace:
    """Named plans, in the order they were declared."""

    name: str
    plans: tuple[Plan, ...]
    plugins: tuple[str, ...] = ()

    def by_digest(self) -> dict[str, Plan]:
        """The plans by their identity."""
        return {plan.digest: plan for plan in self.plans}

    def names(self) -> list[str]:
        """The plans' names."""
        return [plan.name for plan in self.plans]


def _auto_name(graph: str, settings: dict[str, Any]) -> str:
    """A plan's name from its topology and settings.

    Example:
        >>> _auto_name("pacore", {"round_widths": [2, 1]})
        'pacore[round_widths=[2,1]]'
    """
    label = Path(graph).stem if graph.endswith((".yaml", ".yml", ".json")) else graph
    if not settings:
        return label
    shown = ",".join(
        f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in sorted(settings.items())
    )
    return f"{label}[{shown}]"


def _grid_entries(grid: Any, where: str) -> list[dict[str, Any]]:
    blocks = grid if isinstance(grid, list) else [grid]
    entries = []
    for number, block in enumerate(blocks):
        here = f"{where}.{number}" if isinstance(grid, list) else where
        if not isinstance(block, dict) or "graph" not in block:
            raise PlanError(f"{here}: a grid needs graph: [TOPOLOGY, ...] and may give settings")
        graphs = block["graph"] if isinstance(block["graph"], list) else [block["graph"]]
        settings = block.get("settings") or {}
        if not isinstance(settings, dict):
            raise PlanError(f"{here}.settings: expected a mapping of setting to values")
        keys = sorted(settings)
        values = [v if isinstance(v, list) else [v] for v in (settings[k] for k in keys)]
        for graph in graphs:
            for combination in itertools.product(*values):
                chosen = dict(zip(keys, combination, strict=True))
                entries.append({"graph": graph, "settings": chosen})
    return entries


def _resolve_graph(graph: str, base_dir: Path) -> str:
    if graph.endswith((".yaml", ".yml", ".json")) and not Path(graph).is_absolute():
        return str(base_dir / graph)
    return graph


def plan_space_from_data(data: Any, base_dir: Path = Path("."), source: str = "plan space"):
    """A validated plan space from parsed YAML (see the module's docstring).

    Example:
        >>> space = plan_space_from_data({"plans": [{"graph": "majority_vote"}],
        ...     "grid": {"graph": "pacore", "settings": {"round_widths": [[2, 1], [4, 1]]}}})
        >>> space.names()
        ['majority_vote', 'pacore[round_widths=[2,1]]', 'pacore[round_widths=[4,1]]']
    """
    from tmas.api import load_topology

    if not isinstance(data, dict) or not ({"plans", "grid"} & set(data)):
        raise PlanError(f"{source}: expected a mapping with plans: [...] and/or grid: {{...}}")
    unknown = sorted(set(data) - {"name", "plans", "grid", "plugins"})
    if unknown:
        raise PlanError(f"{source}: unknown key(s) {', '.join(unknown)}")
    plugins = tuple(str(p) for p in data.get("plugins") or [])
    entries = list(data.get("plans") or [])
    if not isinstance(data.get("plans") or [], list):
        raise PlanError(f"{source}: plans: expected a list")
    if data.get("grid") is not None:
        entries += _grid_entries(data["grid"], f"{source}: grid")
    plans: list[Plan] = []
    seen: dict[str, str] = {}
    for number, entry in enumerate(entries):
        where = f"{source}: plan {number + 1}"
        if not isinstance(entry, dict) or not isinstance(entry.get("graph"), str):
            raise PlanError(f"{where}: expected {{graph: TOPOLOGY, settings: {{...}}, name: ...}}")
        extra = sorted(set(entry) - {"name", "graph", "settings"})
        if extra:
            raise PlanError(f"{where}: unknown key(s) {', '.join(extra)}")
        settings = entry.get("settings") or {}
        if not isinstance(settings, dict):
            raise PlanError(f"{where}: settings: expected a mapping")
        name = str(entry.get("name") or _auto_name(entry["graph"], settings))
        try:
            spec = load_topology(_resolve_graph(entry["graph"], base_dir), plugins=plugins)
            plan = make_plan(name, spec, settings)
        except (SpecError, ConfigError, ValueError) as exc:
            raise PlanError(f"{where} ({name}): {exc}") from None
        if plan.digest in seen:
            raise PlanError(f"{where}: {name} is the same plan as {seen[plan.digest]}")
        seen[plan.digest] = name
        plans.append(plan)
    if not plans:
        raise PlanError(f"{source}: no plans")
    names = [p.name for p in plans]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise PlanError(f"{source}: plan name(s) used twice: {', '.join(twice)}")
    return PlanSpace(name=str(data.get("name") or source), plans=tuple(plans), plugins=plugins)


def load_plan_space(path: Path | str) -> PlanSpace:
    """The plan space of a YAML or JSON file; PlanError naming what is wrong.

    Example:
        >>> load_plan_space("/no/such/plans.yaml")
        Traceback (most recent call last):
        ...
        tmas.orchrm.plans.PlanError: cannot read /no/such/plans.yaml: ...
    """
    path = Path(path)
    try:
        data = read_data_file(path)
    except SpecError as exc:
        raise PlanError("; ".join(exc.problems)) from None
    return plan_space_from_data(data, path.parent, str(path))
