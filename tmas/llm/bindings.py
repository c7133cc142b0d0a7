"""Role bindings: what every model call of one role is made with, resolved once per run.

A run's plan holds one frozen :class:`RoleBinding` per role it knows: the backend kind and
model id that serve the role, the endpoint, the adapter, the temperature and the answer
budget. :func:`resolve_bindings` is the one place these are worked out from the run's
settings, backend and roles; the router is built from the bindings
(:func:`tmas.llm.backend.make_router`) and ``tmas show`` prints them, so what a run sends is
what its plan says.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from tmas.config import ConfigError, RoleModel, TMASConfig
from tmas.roles import Role, RoleBook


class RoleBinding(BaseModel):
    """How one role's calls are made: ``kind`` (the backend kind serving it), ``model`` (the
    model id), ``base_url`` (an OpenAI-compatible endpoint), ``adapter`` (hf: a LoRA adapter
    folder), ``temperature`` (None: the model's own default), ``max_tokens`` (the answer
    budget) and ``model_of`` (the role whose model settings it borrows, None for none).

    Example:
        >>> binding = RoleBinding(kind="openai", model="m", base_url="http://h/v1",
        ...                       temperature=0.0, max_tokens=64)
        >>> binding.describe()
        'openai:m @ http://h/v1'
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    model: str
    base_url: str | None = None
    adapter: str | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int = Field(ge=1, le=262_144)
    model_of: Role | None = None

    def client(self) -> tuple[str, str, str | None, str | None]:
        """What tells one chat model from another: kind, model id, endpoint, adapter (roles
        with the same client share one model object).

        Example:
            >>> RoleBinding(kind="llamacpp", model="qwen", max_tokens=8).client()
            ('llamacpp', 'qwen', None, None)
        """
        return self.kind, self.model, self.base_url, self.adapter

    def describe(self) -> str:
        """The model as one line: ``kind:model``, ``@ URL`` for an endpoint, ``+ ADAPTER``.

        Example:
            >>> RoleBinding(kind="hf", model="smollm2", adapter="/a", max_tokens=8).describe()
            'hf:smollm2 + /a'
        """
        where = f" @ {self.base_url}" if self.base_url else ""
        adapter = f" + {self.adapter}" if self.adapter else ""
        return f"{self.kind}:{self.model}{where}{adapter}"


def _has_model(settings: RoleModel | None) -> bool:
    """Whether ``settings`` choose a model of their own (a model id, an endpoint or an
    adapter), not only a budget or a temperature."""
    return settings is not None and any(
        value is not None for value in (settings.model, settings.base_url, settings.adapter)
    )


def _served_by(
    kind: str,
    model: str | None,
    base_url: str | None,
    adapter: str | None,
    own: RoleModel | None,
    role: Role,
) -> tuple[str, str, str | None, str | None]:
    """Kind, model id, endpoint and adapter of a role whose model settings are ``own`` (None:
    the backend's own model)."""
    if not _has_model(own):
        return kind, model or "default", base_url, adapter
    assert own is not None
    if own.adapter is not None:
        if kind != "hf" or own.base_url is not None:
            served = "a served model" if own.base_url is not None else kind
            raise ConfigError(f"the {role} role's adapter needs the hf backend, not {served}")
        chosen = None if own.adapter == "none" else own.adapter
        return kind, own.model or model or "default", None, chosen
    url = own.base_url or base_url
    if url is not None:
        if (own.model or model) is None:
            raise ConfigError(f"the {role} role's endpoint needs a model name (--role-model)")
        return "openai", own.model or model or "default", url, None
    return kind, own.model or model or "default", None, adapter


def resolve_bindings(
    config: TMASConfig,
    roles: RoleBook,
    *,
    kind: str,
    model: str | None,
    base_url: str | None = None,
    adapter: str | None = None,
) -> dict[Role, RoleBinding]:
    """One binding per role of ``roles`` (ConfigError for a role ``config`` names that it does
    not know): the model settings
    of its own ``roles`` entry when they choose a model, else those of the role whose model it
    borrows, else the backend's (``kind``, ``model``, ``base_url``, ``adapter``); its own
    temperature, else the lender's, else the run's; its own budget, else its declared one.
    ConfigError for settings that cannot work (an adapter off the hf backend, an endpoint
    without a model name).

    Example:
        >>> config = TMASConfig(temperature=0.5,
        ...                     roles={"verifier": RoleModel(model="judge", temperature=0.0)})
        >>> found = resolve_bindings(config, RoleBook.registered(), kind="openai", model="m",
        ...                          base_url="http://h/v1")
        >>> found["solver"].describe(), found["proof_judge"].describe()
        ('openai:m @ http://h/v1', 'openai:judge @ http://h/v1')
        >>> found["proof_judge"].temperature, found["proof_judge"].max_tokens
        (0.0, 512)
    """
    config.check_roles(roles)
    found: dict[Role, RoleBinding] = {}
    for role in roles:
        lender = roles.model_key(role)
        own, lent = config.roles.get(role), config.roles.get(lender)
        source = own if _has_model(own) else lent if lender != role else None
        served = _served_by(kind, model, base_url, adapter, source, role)
        temperature = _first(own, lent if lender != role else None, "temperature")
        budget = own.max_tokens if own is not None and own.max_tokens is not None else None
        found[role] = RoleBinding(
            kind=served[0],
            model=served[1],
            base_url=served[2],
            adapter=served[3],
            temperature=config.temperature if temperature is None else temperature,
            max_tokens=budget if budget is not None else roles[role].max_tokens,
            model_of=lender if lender != role else None,
        )
    return found


def _first(own: RoleModel | None, lent: RoleModel | None, name: str) -> float | None:
    """The first of ``own``'s and ``lent``'s field ``name`` that is set."""
    for settings in (own, lent):
        value = getattr(settings, name, None) if settings is not None else None
        if value is not None:
            return value
    return None


def described_models(bindings: Mapping[Role, RoleBinding]) -> dict[Role, str]:
    """Each role's model as one line (:meth:`RoleBinding.describe`).

    Example:
        >>> described_models({"solver": RoleBinding(kind="llamacpp", model="qwen",
        ...                                           max_tokens=8)})
        {'solver': 'llamacpp:qwen'}
    """
    return {role: binding.describe() for role, binding in bindings.items()}
