"""Command-line settings combine as documented: per-role options and ``--set roles=`` merge
field by field, and the topology's config gives way to both."""

from __future__ import annotations

from tmas.cli.inputs import caller_settings, role_settings
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.llm.backend import BackendSpec


def build_config(spec, given, settings, roles):  # type: ignore[no-untyped-def]
    """The config a command line's values give a run of ``spec`` (as ``tmas solve`` plans it)."""
    return plan_run(spec, caller_settings(given, settings, roles), BackendSpec()).config


def test_role_options_and_set_roles_both_hold() -> None:
    roles = role_settings(["verifier=judge-model"], ["verifier=http://judge:8000/v1"])
    config = build_config(
        load_bundled("tmas"), {}, ['roles={"verifier": {"max_tokens": 64}}'], roles
    )
    verifier = config.roles["verifier"]
    assert (verifier.model, verifier.base_url, verifier.max_tokens) == (
        "judge-model",
        "http://judge:8000/v1",
        64,
    )
    assert config.max_tokens_for("verifier") == 64


def test_set_roles_wins_field_by_field_over_the_spec_config() -> None:
    spec = load_bundled("tmas").with_config(
        roles={"verifier": {"model": "spec-judge", "max_tokens": 32}}
    )
    config = build_config(spec, {}, ['roles={"verifier": {"max_tokens": 80}}'], {})
    assert (config.roles["verifier"].model, config.roles["verifier"].max_tokens) == (
        "spec-judge",
        80,
    )
