"""Orchestration plans: a validated topology spec plus the settings a run of it uses.

A plan's canonical text (YAML, keys in a fixed order) is what the reward model reads and what
identifies a plan (:func:`plan_digest`): two plans with the same wiring and settings are the
same plan, whatever they are called. Settings are shown as they differ from the framework's
defaults, so a plan from a plan-space file and the same plan recovered from an evaluation's
saved identity read alike. The seed and the fault-handling settings are not part of a plan.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import yaml

from tmas.config import EXECUTION_SETTINGS, TMASConfig
from tmas.graphs.settings import canonical_settings, topology_config
from tmas.graphs.spec import GraphSpec, parse_spec

NOT_PLAN_SETTINGS = EXECUTION_SETTINGS | {"seed"}
"""Config fields that say how a run samples or copes with faults, not what it executes."""


class PlanError(ValueError):
    """A plan, plan space or plan record cannot be used; the message says why."""


def plan_settings(config: TMASConfig) -> dict[str, Any]:
    """The settings of a run that differ from the defaults (seed and fault handling left out).

    Example:
        >>> plan_settings(TMASConfig(n_candidates=2, seed=7, max_retries=0,
        ...                          roles={"verifier": {"max_tokens": 64}}))
        {'n_candidates': 2, 'verifier_max_tokens': 64}
    """
    defaults = canonical_settings(TMASConfig())
    current = canonical_settings(config)
    return {
        key: value
        for key, value in current.items()
        if key not in NOT_PLAN_SETTINGS and value != defaults.get(key)
    }


def _node_text(node: Any) -> dict[str, Any]:
    shown: dict[str, Any] = {"id": node.id, "type": node.type}
    if node.role:
        shown["role"] = node.role
    if node.params:
        shown["params"] = {k: node.params[k] for k in sorted(node.params)}
    return shown


def _edge_text(edge: Any) -> dict[str, Any]:
    shown: dict[str, Any] = {"from": edge.source, "to": edge.targets}
    if edge.fanout is not None:
        shown["fanout"] = edge.fanout.model_dump(exclude_none=True)
    if edge.conditions:
        shown["until"] = edge.conditions
        shown["exit"] = edge.exit
    return shown


def _prompt_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def plan_document(spec: GraphSpec, config: TMASConfig) -> dict[str, Any]:
    """The plan as plain data in canonical order: topology name, settings, roles, nodes, edges,
    and a digest of each overridden prompt (their text would drown the wiring).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> spec = load_bundled("majority_vote")
        >>> document = plan_document(spec, topology_config(spec, {"n_candidates": 3}))
        >>> document["topology"], document["settings"]
        ('majority_vote', {'n_candidates': 3, 'max_iterations': 1})
    """
    document: dict[str, Any] = {
        "topology": spec.name,
        "settings": plan_settings(config),
    }
    if spec.roles:
        document["roles"] = {
            name: spec.roles[name].model_dump(exclude_defaults=True) for name in sorted(spec.roles)
        }
    document["nodes"] = [_node_text(node) for node in spec.nodes]
    document["edges"] = [_edge_text(edge) for edge in spec.edges]
    if spec.prompts:
        document["prompts"] = {k: _prompt_digest(spec.prompts[k]) for k in sorted(spec.prompts)}
    return document


def plan_text(spec: GraphSpec, config: TMASConfig) -> str:
    """The canonical YAML text of a plan (what the reward model reads).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> spec = load_bundled("majority_vote")
        >>> plan_text(spec, topology_config(spec)).splitlines()[:3]
        ['topology: majority_vote', 'settings: {max_iterations: 1}', 'nodes:']
    """
    return yaml.safe_dump(
        plan_document(spec, config), sort_keys=False, default_flow_style=None, width=100
    )


def plan_digest(text: str) -> str:
    """The identity of a plan: a digest of its canonical text.

    Example:
        >>> plan_digest("topology: x\\n") == plan_digest("topology: x\\n")
        True
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Plan:
    """A runnable plan: its name, validated spec, resolved config and canonical text."""

    name: str
    spec: GraphSpec
    config: TMASConfig
    text: str

    @property
    def digest(self) -> str:
        """The plan's identity (:func:`plan_digest` of its text)."""
        return plan_digest(self.text)

    def record(self) -> dict[str, Any]:
        """The plan as a run or a reward model saves it.

        Example:
            >>> from tmas.graphs.bundled import load_bundled
            >>> make_plan("mv", load_bundled("majority_vote")).record()["name"]
            'mv'
        """
        return {"name": self.name, "digest": self.digest, "text": self.text}


def make_plan(name: str, spec: GraphSpec, settings: dict[str, Any] | TMASConfig | None = None):
    """A plan from a validated spec and the settings that override its ``config:`` block.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> make_plan("mv3", load_bundled("majority_vote"), {"n_candidates": 3}).config.n_candidates
        3
    """
    config = topology_config(spec, settings)
    return Plan(name=name, spec=spec, config=config, text=plan_text(spec, config))


def plan_from_identity(
    identity: dict[str, Any], source: str = "evaluation", name: str | None = None
) -> Plan:
    """The plan an evaluation ran, from its saved identity (``identity.json``), called
    ``name`` (default: its topology's name).

    Example:
        >>> from tmas.eval.identity import evaluation_identity
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.graphs.run_plan import plan_run
        >>> from tmas.llm.backend import BackendSpec
        >>> identity = evaluation_identity(plan_run(load_bundled("pacore"), None,
        ...                                         BackendSpec(model="smollm2")))
        >>> plan_from_identity(identity).spec.name
        'pacore'
    """
    if not isinstance(identity.get("spec"), dict) or not isinstance(identity.get("config"), dict):
        raise PlanError(f"{source} does not record its topology spec and settings")
    try:
        spec = parse_spec(identity["spec"], source)
        config = TMASConfig(**identity["config"])
    except ValueError as exc:
        raise PlanError(f"{source}: its saved plan cannot be read ({exc})") from None
    name = name or str(identity.get("graph") or spec.name)
    return Plan(name=name, spec=spec, config=config, text=plan_text(spec, config))
