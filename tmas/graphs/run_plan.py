"""A run's plan: everything that determines a run, resolved once where the run is asked for.

The command line, the Python API, ``tmas serve`` and evaluations each turn what they were given
(a topology, settings, models, plugins, prompt overrides) into one frozen :class:`RunPlan` with
:func:`plan_run`; the plan is saved with the run, compiled as it is
(:func:`tmas.graphs.compiler.compile_plan`), shown by ``tmas show`` and compared by an
evaluation's identity. Nothing downstream merges settings again.

Example:
    >>> from tmas.graphs.bundled import load_bundled
    >>> from tmas.llm.backend import BackendSpec, make_router
    >>> plan = plan_run(load_bundled("majority_vote"), {"n_candidates": 3},
    ...                 BackendSpec(model="smollm2"))
    >>> plan.config.n_candidates, plan.config.max_iterations, plan.models["verifier"]
    (3, 1, 'llamacpp:smollm2')
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tmas.config import ConfigError, TMASConfig, describe_validation_error
from tmas.graphs.catalog import run_plugins, spec_channels
from tmas.graphs.pipeline import with_inline_bodies
from tmas.graphs.plugin_files import plugin_digest, plugin_of_module
from tmas.graphs.settings import merged_config
from tmas.graphs.spec import GraphSpec, parse_spec
from tmas.graphs.validate import validate_spec
from tmas.llm.backend import BackendSpec, make_router
from tmas.llm.bindings import RoleBinding, described_models, resolve_bindings
from tmas.nodes.channels import BUILTIN_CHANNELS, ChannelSpec
from tmas.nodes.prompts import PromptSet, builtin_templates
from tmas.registration import registry
from tmas.roles import RoleBook
from tmas.storage.run_registry import RunRecord
from tmas.storage.sqlite import StorageError

if TYPE_CHECKING:  # a plan names its router; making one loads the model stack
    from tmas.llm.router import ModelRouter

Settings = TMASConfig | Mapping[str, Any] | None


class PluginRef(BaseModel):
    """A plugin a run loads: its reference (module name or absolute file path) and a digest of
    its source (None when it has no file)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    module: str
    sha256: str | None = None


class RunPlan(BaseModel):
    """Everything that determines one run: the topology (pipeline bodies inline, prompt
    overrides in it), the resolved config, the backend, the binding of every role (model,
    endpoint, temperature, budget, adapter: what its calls are made with), the roles and state
    channels the run knows, every prompt template it can render, and its plugins.

    Frozen and plain data: it round-trips through JSON (``model_dump(mode="json")``), which is
    how a run keeps it. A plan saved before plans held bindings (it held each role's model as
    text, ``models``) gets them from its own config, backend and roles when it is read.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    topology: GraphSpec
    config: TMASConfig
    backend: BackendSpec
    bindings: dict[str, RoleBinding] = Field(default_factory=dict)
    roles: dict[str, dict[str, Any]] = Field(default_factory=dict)
    channels: dict[str, dict[str, Any]] = Field(default_factory=dict)
    prompts: dict[str, str] = Field(default_factory=dict)
    plugins: list[PluginRef] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _bindings_of_older_plans(cls, data: Any) -> Any:
        """A plan saved with ``models`` (text) instead of bindings: bindings resolved from its
        own config, backend and roles (what its calls were made with)."""
        if not isinstance(data, dict) or "bindings" in data:
            return data
        data = dict(data)
        data.pop("models", None)
        try:
            config, backend = TMASConfig(**data["config"]), BackendSpec(**data["backend"])
            roles = RoleBook.from_declarations(data.get("roles") or {})
        except (KeyError, TypeError, ValueError):
            return data  # left for validation to name
        data["bindings"] = backend_bindings(config, backend, roles)
        return data

    @property
    def name(self) -> str:
        """The topology's name."""
        return self.topology.name

    @property
    def models(self) -> dict[str, str]:
        """Each role's model as one line (``kind:model @ URL + ADAPTER``).

        Example:
            >>> from tmas.graphs.bundled import load_bundled
            >>> plan_run(load_bundled("tmas"), None, BackendSpec(model="qwen")).models["summary"]
            'llamacpp:qwen'
        """
        return described_models(self.bindings)

    def role_book(self) -> RoleBook:
        """The roles of this run."""
        return RoleBook.from_declarations(self.roles)

    def channel_specs(self) -> dict[str, ChannelSpec]:
        """The state channels of this run (the built-in ones too, for plans saved before they
        were listed)."""
        saved = {name: ChannelSpec(name, **spec) for name, spec in self.channels.items()}
        return {**BUILTIN_CHANNELS, **saved}

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
        self,
        settings: Settings | Sequence[Settings] = None,
        *,
        backend: BackendSpec | Mapping[str, Any] | None = None,
    ) -> RunPlan:
        """This plan changed: ``settings`` merged over its config (:func:`merged_config`, the
        one merge: a fork's ``--set``, a served run's seed, a resume's corrected role models)
        and ``backend`` (a ``BackendSpec`` replaces it; a mapping changes the fields it names,
        ``engine_args`` merged); the bindings follow. ConfigError names a setting that cannot
        work.

        Example:
            >>> from tmas.graphs.bundled import load_bundled
            >>> plan = plan_run(load_bundled("tmas"), None, BackendSpec(model="smollm2"))
            >>> plan.revised(backend={"model": "qwen"}).bindings["solver"].model
            'qwen'
            >>> plan.revised({"verifier_max_tokens": 64}).bindings["verifier"].max_tokens
            64
        """
        config = self.config if settings is None else merged_config(self.config, *_layers(settings))
        chosen = self.backend if backend is None else revised_backend(self.backend, backend)
        roles = self.role_book()
        bindings = backend_bindings(config, chosen, roles)
        return self.model_copy(update={"config": config, "backend": chosen, "bindings": bindings})


def with_current_plugins(plan: RunPlan) -> tuple[RunPlan, list[str]]:
    """``plan`` with the digest of each plugin's source as it is now, and one line for each
    plugin whose source changed since the plan was saved (a resume runs the code there is).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> plan = plan_run(load_bundled("tmas"), None, BackendSpec(model="smollm2"))
        >>> with_current_plugins(plan) == (plan, [])
        True
    """
    changes, plugins = [], []
    for plugin in plan.plugins:
        now = plugin_digest(plugin.module)
        if now != plugin.sha256:
            was, sha = plugin.sha256 or "none", now or "none"
            changes.append(f"plugin {plugin.module} changed since the run was saved (sha256 "
                           f"{was} -> {sha}): it runs as it is now")  # fmt: skip
        plugins.append(PluginRef(module=plugin.module, sha256=now))
    if not changes:
        return plan, []
    return plan.model_copy(update={"plugins": plugins}), changes


def plan_router(plan: RunPlan) -> ModelRouter:
    """The models of a run, built from its plan's role bindings on its backend
    (:func:`tmas.llm.backend.make_router`): what a run manager builds a saved run's models with.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> plan = plan_run(load_bundled("tmas"), {"verifier_max_tokens": 32},
        ...                 BackendSpec(kind="openai", model="m", base_url="http://127.0.0.1:9/v1"))
        >>> plan_router(plan).binding("verifier").max_tokens
        32
    """
    return make_router(plan.backend, plan.bindings, plan.config.seed)


def revised_backend(backend: BackendSpec, changes: BackendSpec | Mapping[str, Any]) -> BackendSpec:
    """``backend`` with ``changes``: a ``BackendSpec`` replaces it; a mapping changes the
    fields it names (``engine_args`` merged into the saved ones), the default local model
    named; a base URL makes an embedded or custom backend an OpenAI-compatible one. ConfigError
    for a value that cannot work.

    Example:
        >>> revised_backend(BackendSpec(kind="vllm", model="m", engine_args={"dtype": "half"}),
        ...                 {"engine_args": {"enforce_eager": True}}).engine_args
        {'dtype': 'half', 'enforce_eager': True}
    """
    if isinstance(changes, BackendSpec):
        return changes
    values = {**backend.model_dump(), **changes}
    if "engine_args" in changes:
        values["engine_args"] = {**backend.engine_args, **changes["engine_args"]}
    if values.get("base_url") and values.get("kind") in ("llamacpp", "custom"):
        values["kind"] = "openai"  # a URL names a server (models passed from Python move there)
    try:
        return BackendSpec(**values).resolved()
    except ValidationError as exc:
        raise ConfigError(f"invalid backend: {describe_validation_error(exc)}") from None


def backend_bindings(
    config: TMASConfig, backend: BackendSpec, roles: RoleBook
) -> dict[str, RoleBinding]:
    """Every role's binding on ``backend`` (:func:`tmas.llm.bindings.resolve_bindings`).

    Example:
        >>> found = backend_bindings(TMASConfig(), BackendSpec(model="qwen"), RoleBook.builtin())
        >>> found["verifier"].describe(), found["verifier"].max_tokens
        ('llamacpp:qwen', 256)
    """
    return resolve_bindings(config, roles, kind=backend.kind, model=backend.model,
                            base_url=backend.base_url, adapter=backend.adapter)  # fmt: skip


def _layers(settings: Settings | Sequence[Settings]) -> list[Settings]:
    """Settings given as one layer or as layers in rising priority."""
    if isinstance(settings, list | tuple):
        return list(settings)
    return [settings]


def plan_run(
    topology: GraphSpec,
    settings: Settings | Sequence[Settings],
    backend: BackendSpec,
    plugins: Sequence[str] = (),
) -> RunPlan:
    """The plan of a run of ``topology`` (validated first): its ``config:`` block under
    ``settings`` (one layer, or layers in rising priority; :func:`merged_config`, the one
    merge), the roles its spec declares beside the registered ones and the binding of each,
    its channels, every template it can render, and the plugins it loads (those named, then
    those whose registrations it uses) with digests. ConfigError names a setting that cannot
    work (an unknown role, selection rule or similarity, an adapter off the hf backend).
    """
    spec = with_inline_bodies(validate_spec(topology))  # saved whole: no file to resume with
    config = merged_config(spec.config, *_layers(settings))
    roles = spec_roles(spec)
    config.check_roles(roles)
    found = registry()
    try:
        named = [(found.similarities, config.similarity),
                 (found.similarities, config.memory_similarity)]  # fmt: skip
        if config.selection is not None:
            named.append((found.selections, config.selection))
        owners = [table.entry(name).owner for table, name in named]
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    refs = run_plugins(spec, [*plugins, *filter(None, map(plugin_of_module, owners))])
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
        bindings=backend_bindings(config, backend, roles),
        roles=roles.declarations(),
        channels={name: c.record() for name, c in spec_channels(spec).items()},
        prompts={**builtin_templates(), **spec.prompts},
        plugins=[PluginRef(module=ref, sha256=plugin_digest(ref)) for ref in plugins],
    )


def saved_plan(record: RunRecord) -> RunPlan:
    """The plan a saved run runs by, as it saved it; StorageError for a run saved before runs
    kept plans whose settings could not be read when its database was upgraded (the reason is
    in its record).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.storage.run_registry import RunRecord
        >>> plan = plan_run(load_bundled("rsa"), None, BackendSpec(model="smollm2"))
        >>> saved_plan(RunRecord("r", 0.0, "1+1?", None, "rsa", plan=plan.record())) == plan
        True
    """
    if record.plan is None:
        raise StorageError(
            f"run {record.run_id} was saved before runs kept their plans, and its settings "
            f"could not be read: {record.error or 'no settings saved'}"
        )
    return RunPlan.model_validate(record.plan)


def legacy_plan(
    graph: str,
    config: Mapping[str, Any],
    backend: Mapping[str, Any],
    topology: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The plan of a run saved before runs kept plans, as plain data: its saved config (as it
    was resolved then: nothing merged), backend, topology (for runs saved before topologies
    were, the bundled one of its ``graph`` name) and plugins, with today's templates. What a
    run database's upgrade saves in their place (:func:`tmas.storage.open_storage`'s
    ``upgrade``); nothing is imported.

    Example:
        >>> plan = legacy_plan("pacore", {"n_candidates": 2, "verifier_max_tokens": 64},
        ...                    {"kind": "llamacpp", "model": "qwen"}, None)
        >>> plan["topology"]["name"], plan["bindings"]["verifier"]["max_tokens"]
        ('pacore', 64)
    """
    from tmas.graphs.bundled import load_bundled

    topology = topology or {}
    spec = parse_spec(topology.get("spec") or load_bundled(graph).model_dump(by_alias=True))
    plan = _assembled(spec, TMASConfig(**config), BackendSpec(**backend), spec_roles(spec),
                      list(topology.get("plugins", [])))  # fmt: skip
    return plan.record()
