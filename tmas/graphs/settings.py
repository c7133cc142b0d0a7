"""Settings merged: the one merge of a run's settings (:func:`merged_config`: a topology's
``config:`` block, then what a caller gives, then a fork's or a resume's changes), and the
shape in which identities and plan texts compare them (:func:`canonical_settings`).

A run's config is resolved once, by :func:`tmas.graphs.run_plan.plan_run` (which the command
line, the Python API, ``tmas serve`` and evaluations call) and changed only by
:meth:`tmas.graphs.run_plan.RunPlan.revised`, both through :func:`merged_config`;
:func:`topology_config` is the same resolution for a caller who wants the config alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tmas.config import (
    BUDGET_SPELLINGS,
    TMASConfig,
    load_config,
    role_values,
    with_budgets_in_roles,
)
from tmas.graphs.spec import GraphSpec
from tmas.roles import RoleBook


def topology_config(
    spec: GraphSpec, config: TMASConfig | Mapping[str, Any] | None = None
) -> TMASConfig:
    """The config a run of ``spec`` uses: defaults, then the spec's ``config:`` block, then
    the settings given (a ``TMASConfig``'s explicitly set fields, or a mapping). Round widths
    given set the number of iterations unless it is given too. ConfigError names a bad field.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> config = topology_config(load_bundled("majority_vote"), TMASConfig(n_candidates=3))
        >>> config.max_iterations, config.n_candidates
        (1, 3)
        >>> topology_config(load_bundled("self_refine"), {"n_verifications": 2}).n_verifications
        2
    """
    return merged_config(spec.config, config)


def canonical_settings(config: TMASConfig) -> dict[str, Any]:
    """``config`` as plain data in the shape identities and plan texts compare: each built-in
    role's answer budget in its flat spelling, at its value in this run, where the fields of
    that name stood (after ``seed``), and no ``roles`` entry that held only a budget.

    Example:
        >>> data = canonical_settings(TMASConfig(roles={"verifier": {"max_tokens": 64}}))
        >>> data["verifier_max_tokens"], data["solver_max_tokens"], data["roles"]
        (64, 512, {})
    """
    data = config.model_dump(mode="json")
    roles = data["roles"]
    budgets = {}
    for key, role in BUDGET_SPELLINGS.items():
        entry = roles.get(role)
        given = entry.get("max_tokens") if entry else None
        budgets[key] = given if given is not None else RoleBook.builtin()[role].max_tokens
        if entry is not None:
            entry["max_tokens"] = None
            if all(value is None for value in entry.values()):
                del roles[role]
    ordered: dict[str, Any] = {}
    for key, value in data.items():
        ordered[key] = value
        if key == "seed":
            ordered.update(budgets)
    return ordered


def settings_layer(layer: TMASConfig | Mapping[str, Any] | None) -> dict[str, Any]:
    """One layer of settings as plain values: a mapping as it is (flat budget spellings moved
    into ``roles``), or the fields a ``TMASConfig`` was given explicitly (the defaults it did
    not set give way to lower layers).

    Example:
        >>> settings_layer(TMASConfig(n_candidates=2)), settings_layer(None)
        ({'n_candidates': 2}, {})
        >>> settings_layer({"solver_max_tokens": 99})
        {'roles': {'solver': {'max_tokens': 99}}}
    """
    if layer is None:
        return {}
    if isinstance(layer, TMASConfig):
        values = {name: getattr(layer, name) for name in layer.model_fields_set}
    else:
        values = dict(layer)
    values = with_budgets_in_roles(values)
    roles = values.get("roles")
    if isinstance(roles, Mapping):
        values["roles"] = {role: role_values(entry) for role, entry in roles.items()}
    return values


def merged_config(*layers: TMASConfig | Mapping[str, Any] | None) -> TMASConfig:
    """The one merge of a run's settings: ``layers`` in rising priority (a topology's
    ``config:`` block, then what a caller gives, then a fork's or a resume's changes), each
    read by :func:`settings_layer`. Per-role settings merge field by field (``--role-model
    verifier=M`` and ``--set roles={"verifier": {"max_tokens": 64}}`` both hold); round widths
    in a layer set the number of iterations unless that layer sets it too. ConfigError names
    each bad field.

    Example:
        >>> merged_config({"max_iterations": 1}, {"round_widths": [4, 2]}).max_iterations
        2
        >>> merged = merged_config({"roles": {"verifier": {"model": "m"}}},
        ...                        {"verifier_max_tokens": 64})
        >>> merged.roles["verifier"].model, merged.roles["verifier"].max_tokens
        ('m', 64)
        >>> merged_config({"round_widths": [4, 2, 1]}, {"max_iterations": 5})
        Traceback (most recent call last):
        ...
        tmas.config.ConfigError: invalid configuration: ... lists 3 rounds but max_iterations is 5
    """
    values: dict[str, Any] = {}
    for layer in layers:
        changes = settings_layer(layer)
        if "round_widths" in changes and "max_iterations" not in changes:
            values.pop("max_iterations", None)
        roles, before = changes.pop("roles", None), values.get("roles")
        if roles is not None:
            values["roles"] = _merged_roles(before, roles) if before is not None else roles
        values.update(changes)
    return load_config(**values)


def _merged_roles(before: Any, after: Any) -> Any:
    """Two layers' per-role settings merged field by field, the later winning; anything that
    is not a mapping of mappings is left for validation to name."""
    layers = (before, after)
    if not all(
        isinstance(layer, Mapping) and all(isinstance(v, Mapping) for v in layer.values())
        for layer in layers
    ):
        return after
    merged = {role: dict(entry) for role, entry in before.items()}
    for role, entry in after.items():
        merged[role] = {**merged.get(role, {}), **entry}
    return merged
