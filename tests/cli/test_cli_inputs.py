"""Command-line settings combine as documented: per-role options and ``--set roles=`` merge
field by field, and the topology's config gives way to both."""

from __future__ import annotations

from tmas.cli.inputs import role_settings, settings_layers
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.llm.backend import BackendSpec


def build_plan(spec, given, settings, roles):  # type: ignore[no-untyped-def]
    """The plan a command line's values give a run of ``spec`` (as ``tmas solve`` plans it)."""
    return plan_run(spec, settings_layers(given, settings, roles), BackendSpec())


def test_role_options_and_set_roles_both_hold() -> None:
    roles = role_settings(["verifier=judge-model"], ["verifier=http://judge:8000/v1"])
    plan = build_plan(load_bundled("tmas"), {}, ['roles={"verifier": {"max_tokens": 64}}'], roles)
    verifier = plan.config.roles["verifier"]
    assert (verifier.model, verifier.base_url, verifier.max_tokens) == (
        "judge-model",
        "http://judge:8000/v1",
        64,
    )
    binding = plan.bindings["verifier"]
    assert (binding.kind, binding.model, binding.base_url, binding.max_tokens) == (
        "openai",
        "judge-model",
        "http://judge:8000/v1",
        64,
    )


def test_the_flat_budget_spelling_is_the_roles_block() -> None:
    plan = build_plan(
        load_bundled("tmas"), {"solver_max_tokens": 99}, ["verifier_max_tokens=40"], {}
    )
    assert plan.config.roles["verifier"].max_tokens == 40
    assert (plan.bindings["solver"].max_tokens, plan.bindings["verifier"].max_tokens) == (99, 40)
    assert plan.bindings["summary"].max_tokens == 128  # the role's own default


def test_set_roles_wins_field_by_field_over_the_spec_config() -> None:
    spec = load_bundled("tmas").with_config(
        roles={"verifier": {"model": "spec-judge", "max_tokens": 32}}
    )
    config = build_plan(spec, {}, ['roles={"verifier": {"max_tokens": 80}}'], {}).config
    assert (config.roles["verifier"].model, config.roles["verifier"].max_tokens) == (
        "spec-judge",
        80,
    )
