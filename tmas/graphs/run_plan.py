"""A run's plan: everything that determines a run, resolved once where the run is asked for.

The command line, the Python API, ``tmas serve`` and evaluations each turn what they were given
(a topology, settings, models, plugins, prompt overrides) into one frozen :class:`RunPlan` with
:func:`plan_run`; the plan is saved with the run, compiled as it is
(:func:`tmas.graphs.compiler.compile_plan`), shown by ``tmas show`` and compared by an
evaluation's identity. Nothing downstream merges settings again.

Example:
    >>> from tmas.graphs.bundled import load_bundled
    >>> from tmas.llm.backend import BackendSpec
    >>> plan = plan_run(load_bundled("majority_vote"), {"n_candidates": 3},
    ...                 BackendSpec(model="smollm2"))
    >>> plan.config.n_candidates, plan.config.max_iterations, plan.models["verifier"]
    (3, 1, 'llamacpp:smollm2')
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tmas.config import ConfigError, TMASConfig
from tmas.graphs.catalog import run_plugins, spec_channels
from tmas.graphs.pipeline import with_inline_bodies
from tmas.graphs.plugin_files import plugin_digest, plugin_of
from tmas.graphs.settings import topology_config
from tmas.graphs.spec import GraphSpec, parse_spec
from tmas.graphs.validate import validate_spec
from tmas.llm.backend import BackendSpec
from tmas.memory.similarity import similarities_of
from tmas.nodes.channels import ChannelSpec
from tmas.nodes.control.selection_rules import selection_rule
from tmas.nodes.prompts import PromptSet, builtin_templates
from tmas.roles import BUILTIN_ROLES, RoleBook

Settings = TMASConfig | Mapping[str, Any] | None


class PluginRef(BaseModel):
    """A plugin a run loads: its reference (module name or absolute file path) and a digest of
    its source (None when it has no file)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    module: str
    sha256: str | None = None


class RunPlan(BaseModel):
    """Everything that determines one run: the topology (pipeline bodies inline, prompt
    overrides in it), the resolved config, the backend, the model of every role, the roles and
    state channels the run knows, every prompt template it can render, and its plugins.

    Frozen and plain data: it round-trips through JSON (``model_dump(mode="json")``), which is
    how a run keeps it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    topology: GraphSpec
    config: TMASConfig
    backend: BackendSpec
    models: dict[str, str] = Field(default_factory=dict)
    roles: dict[str, dict[str, Any]] = Field(default_factory=dict)
    channels: dict[str, dict[str, Any]] = Field(default_factory=dict)
    prompts: dict[str, str] = Field(default_factory=dict)
    plugins: list[PluginRef] = Field(default_factory=list)

    @property
    def name(self) -> str:
        """The topology's name."""
        return self.topology.name

    def role_book(self) -> RoleBook:
        """The roles of this run."""
        return RoleBook.from_declarations(self.roles)

    def channel_specs(self) -> dict[str, ChannelSpec]:
        """The state channels of this run."""
        return {name: ChannelSpec(name, **spec) for name, spec in self.channels.items()}

    def prompt_set(self) -> PromptSet:
        """The templates of this run, exactly as planned (nothing looked up again)."""
        return PromptSet.exact(self.prompts)

    def plugin_refs(self) -> list[str]:
        """The plugins to load before compiling, in order."""
        return [plugin.module for plugin in self.plugins]

    def record(self) -> dict[str, Any]:
        """This plan as plain JSON-able data."""
        return self.model_dump(mode="json", by_alias=True)

    def digest(self) -> str:
        """A short digest of the whole plan (the same plan, the same digest).

        Example:
            >>> from tmas.graphs.bundled import load_bundled
            >>> plan = plan_run(load_bundled("tmas"), None, BackendSpec(model="smollm2"))
            >>> plan.digest() == RunPlan.model_validate(plan.record()).digest()
            True
        """
        text = json.dumps(self.record(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    def revised(
        self, *, config: TMASConfig | None = None, backend: BackendSpec | None = None
    ) -> RunPlan:
        """This plan with another config or backend (a resume with corrected model settings, a
        fork's changed settings); the models of the roles follow.

        Example:
            >>> from tmas.graphs.bundled import load_bundled
            >>> plan = plan_run(load_bundled("tmas"), None, BackendSpec(model="smollm2"))
            >>> plan.revised(backend=BackendSpec(model="qwen")).models["solver"]
            'llamacpp:qwen'
        """
        config = config or self.config
        backend = backend or self.backend
        config.check_roles(self.role_book())
        models = role_models(config, backend, self.role_book())
        return self.model_copy(update={"config": config, "backend": backend, "models": models})


def role_models(config: TMASConfig, backend: BackendSpec, roles: RoleBook) -> dict[str, str]:
    """The model that plays each role: the role's own override, else that of the role whose
    model it borrows, else the backend's.

    Example:
        >>> from tmas.config import RoleModel
        >>> config = TMASConfig(roles={"verifier": RoleModel(model="judge")})
        >>> models = role_models(config, BackendSpec(kind="openai", base_url="http://h/v1",
        ...                      model="m"), RoleBook.registered())
        >>> models["solver"], models["proof_judge"]
        ('openai:m @ http://h/v1', 'openai:judge @ http://h/v1')
    """
    models = {}
    for role in dict.fromkeys([*BUILTIN_ROLES, *roles, *config.roles]):
        override = config.roles.get(role) or config.roles.get(roles.model_key(role))
        model = (override.model if override else None) or backend.model or "default"
        url = (override.base_url if override else None) or backend.base_url
        adapter = (override.adapter if override else None) or backend.adapter
        models[role] = (f"{backend.kind}:{model}" + (f" @ {url}" if url else "")
                        + (f" + {adapter}" if adapter and adapter != "none" else ""))  # fmt: skip
    return models


def plan_run(
    topology: GraphSpec,
    settings: Settings,
    backend: BackendSpec,
    plugins: Sequence[str] = (),
) -> RunPlan:
    """The plan of a run of ``topology`` (validated first): its ``config:`` block under ``settings``
    (:func:`tmas.graphs.settings.topology_config`, the one place settings merge), the roles its
    spec declares beside the registered ones, its channels, every template it can render, and
    the plugins it loads (those named, then those whose registrations it uses) with digests.
    ConfigError names a setting that cannot work (an unknown role, selection rule or
    similarity).
    """
    spec = with_inline_bodies(validate_spec(topology))  # saved whole: no file to resume with
    config = topology_config(spec, settings)
    roles = spec_roles(spec)
    config.check_roles(roles)
    try:
        if config.selection is not None:
            selection_rule(config.selection)
        measures = similarities_of(config)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    refs = run_plugins(spec, [*plugins, *filter(None, map(plugin_of, measures))])
    return _assembled(spec, config, backend, roles, refs)


def spec_roles(spec: GraphSpec) -> RoleBook:
    """The roles a run of ``spec`` knows: the registered ones and those its ``roles:`` declares.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> spec_roles(load_bundled("text_mas"))["judger"].max_tokens
        512
    """
    declared = {name: decl.model_dump() for name, decl in spec.roles.items()}
    return RoleBook.registered().declaring(declared)


def _assembled(
    spec: GraphSpec,
    config: TMASConfig,
    backend: BackendSpec,
    roles: RoleBook,
    plugins: Sequence[str],
) -> RunPlan:
    """The plan of resolved parts: the roles' models, the spec's channels, every template the
    run can render (built-in, registered, the spec's own) and each plugin's digest."""
    return RunPlan(
        topology=spec,
        config=config,
        backend=backend,
        models=role_models(config, backend, roles),
        roles=roles.declarations(),
        channels={name: c.record() for name, c in spec_channels(spec).items()},
        prompts={**builtin_templates(), **spec.prompts},
        plugins=[PluginRef(module=ref, sha256=plugin_digest(ref)) for ref in plugins],
    )


def saved_plan(
    plan: Mapping[str, Any] | None,
    config: Mapping[str, Any],
    backend: Mapping[str, Any],
    topology: Mapping[str, Any] | None,
) -> RunPlan:
    """The plan of a saved run: the plan it saved, or for a run saved before runs kept plans,
    one made of its saved config (as it was resolved then: nothing merged), backend, topology
    and plugins, with today's templates. Nothing is imported: whoever compiles it loads its
    plugins (:meth:`RunPlan.plugin_refs`).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> plan = plan_run(load_bundled("rsa"), None, BackendSpec(model="smollm2"))
        >>> saved_plan(plan.record(), {}, {}, None) == plan
        True
    """
    if plan is not None:
        return RunPlan.model_validate(plan)
    from tmas.graphs.bundled import load_bundled

    topology = topology or {"spec": load_bundled("tmas").model_dump(by_alias=True)}
    spec = parse_spec(topology["spec"])
    return _assembled(spec, TMASConfig(**config), BackendSpec(**backend), spec_roles(spec),
                      list(topology.get("plugins", [])))  # fmt: skip
