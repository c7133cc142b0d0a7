"""An orchestrator LLM that writes a plan for a problem (MAS-Orchestra style, in one shot).

It answers with YAML: ``graph`` (a bundled topology's name, or a whole spec written inline) and
``settings``. Every answer goes through the spec and settings validators; one that fails is
rejected with the reason and never run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from tmas.config import ConfigError
from tmas.graphs.bundled import bundled_names, load_bundled
from tmas.graphs.spec import SpecError
from tmas.nodes.prompts import PromptSet
from tmas.orchrm.plans import Plan, PlanError, make_plan

PLAN_SETTINGS_HELP = (
    "n_candidates (1-256): parallel solutions per round\n"
    "n_verifications (1-64): checks per solution\n"
    "max_iterations (1-1000): rounds\n"
    "round_widths (list of sizes): solutions of each round in turn\n"
    "solver_max_tokens (16-262144): answer budget of each solution\n"
    "temperature (0-2)"
)
YAML_BLOCK = re.compile(r"```(?:ya?ml)?\s*\n(.*?)```", re.S)


@dataclass(frozen=True)
class Proposal:
    """One answer of the orchestrator: a validated plan, or the reason it was rejected."""

    raw: str
    plan: Plan | None
    rejected: str | None


def topology_menu(names: list[str]) -> str:
    """One line per topology: its name and what it does.

    Example:
        >>> topology_menu(["majority_vote"]).startswith("- majority_vote: MV@N")
        True
    """
    return "\n".join(f"- {name}: {load_bundled(name).description.strip()}" for name in names)


def plan_yaml(text: str) -> Any:
    """The YAML document of an answer: its first fenced block, else the whole text.

    Example:
        >>> plan_yaml("Here:\\n```yaml\\ngraph: rsa\\n```")
        {'graph': 'rsa'}
    """
    match = YAML_BLOCK.search(text)
    try:
        return yaml.safe_load(match.group(1) if match else text)
    except yaml.YAMLError as exc:
        raise PlanError(f"not YAML ({str(exc).splitlines()[0]})") from None


def parse_plan(text: str, name: str, allowed: list[str] | None = None) -> Plan:
    """The plan an orchestrator's answer describes, validated; PlanError with the reason.

    Example:
        >>> plan = parse_plan("graph: majority_vote\\nsettings: {n_candidates: 2}", "p1")
        >>> plan.config.n_candidates
        2
        >>> parse_plan("graph: no_such_graph", "p2")
        Traceback (most recent call last):
        ...
        tmas.orchrm.plans.PlanError: unknown topology 'no_such_graph' ...
    """
    from tmas.api import load_topology

    data = plan_yaml(text)
    if not isinstance(data, dict) or "graph" not in data:
        raise PlanError("expected a mapping with graph: and settings:")
    extra = sorted(set(data) - {"graph", "settings"})
    if extra:
        raise PlanError(f"unknown key(s) {', '.join(map(str, extra))}")
    graph, settings = data["graph"], data.get("settings") or {}
    if not isinstance(settings, dict):
        raise PlanError("settings: expected a mapping")
    known = allowed or bundled_names()
    if isinstance(graph, str) and graph not in known:
        raise PlanError(f"unknown topology {graph!r} (choose from {', '.join(known)})")
    if not isinstance(graph, str | dict):
        raise PlanError("graph: expected a topology name or a spec mapping")
    try:
        return make_plan(name, load_topology(graph), settings)
    except SpecError as exc:
        raise PlanError("; ".join(exc.problems)) from None
    except (ConfigError, ValueError) as exc:
        raise PlanError(str(exc).splitlines()[0]) from None


@dataclass
class Orchestrator:
    """Writes ``k`` plans for a problem with a chat model of the framework."""

    model: BaseChatModel
    topologies: list[str]
    prompts: PromptSet
    max_tokens: int = 256

    def messages(self, problem: str) -> list[Any]:
        """The orchestrator's prompt for ``problem``."""
        user = self.prompts.render(
            "orchestrator/user",
            problem=problem,
            topologies=topology_menu(self.topologies),
            settings=PLAN_SETTINGS_HELP,
        )
        return [SystemMessage(self.prompts.template("orchestrator/system")), HumanMessage(user)]

    def propose(self, problem: str, k: int, seed: int = 0) -> list[Proposal]:
        """``k`` answers, each validated (a rejected one keeps its reason)."""
        proposals = []
        for index in range(k):
            reply = self.model.invoke(
                self.messages(problem), max_tokens=self.max_tokens, seed=seed + index
            )
            raw = str(reply.content)
            try:
                plan = parse_plan(raw, f"orchestrator-{index + 1}", self.topologies)
                proposals.append(Proposal(raw, plan, None))
            except PlanError as exc:
                proposals.append(Proposal(raw, None, str(exc)))
        return proposals
