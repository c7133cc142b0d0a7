"""Backend settings (saved with a run) and the chat models built from them."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tmas.config import RoleModel, TMASConfig
from tmas.llm.router import ModelRouter, describe_model
from tmas.roles import Role

VLLM_KINDS = ("vllm", "vllm-server")
BATCHING_SERVER_CONCURRENCY = 256  # vLLM's default max_num_seqs
LOCAL_KINDS = ("llamacpp", "hf", *VLLM_KINDS)  # kinds that load the bundled models


class BackendSpec(BaseModel):
    """Which engine serves the models. Holds no secret: API keys come from the environment.

    ``kind``: ``llamacpp`` (embedded, default), ``openai`` (any OpenAI-compatible endpoint,
    e.g. ``vllm serve``), ``vllm`` (vLLM's async engine in-process), ``vllm-server`` (a vLLM
    OpenAI server the run starts on loopback and stops), ``hf`` (transformers in-process, with
    an optional LoRA ``adapter`` on ``device``) or ``custom`` (chat models a Python
    caller passed; ``model`` describes them, and they cannot be rebuilt from it). ``model``
    is a GGUF path or ``qwen``/``smollm2`` for llamacpp, a served model name for openai, a
    Hugging Face checkpoint folder, hub id or ``qwen``/``smollm2`` for the vLLM and hf kinds.
    ``n_ctx`` is the context length of the local engines (vLLM's ``max_model_len``), and
    ``engine_args`` any further vLLM engine option (``gpu_memory_utilization``,
    ``tensor_parallel_size``, ``dtype``, ...).

    Example:
        >>> BackendSpec(kind="openai", base_url="http://127.0.0.1:8000/v1", model="m").kind
        'openai'
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["llamacpp", "openai", "vllm", "vllm-server", "hf", "custom"] = "llamacpp"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "TMAS_API_KEY"
    n_ctx: int = Field(default=4096, ge=512)
    n_threads: int | None = Field(default=None, ge=1)
    engine: Literal["batched", "serial"] = Field(
        default="batched", description="embedded model: batching engine or one call at a time"
    )
    max_sequences: int = Field(default=8, ge=1, le=256, description="calls decoded together")
    timeout_s: float = Field(default=600.0, gt=0, le=86_400, description="seconds per request")
    engine_args: dict[str, Any] = Field(
        default_factory=dict, description="vLLM engine options (the vllm backends)"
    )
    adapter: str | None = Field(default=None, description="hf: a LoRA adapter folder")
    device: str | None = Field(default=None, description="hf: cpu, cuda, cuda:1 (auto)")

    def default_concurrency(self) -> int:
        """Model calls a run keeps in flight by default: 256 for a server or engine that
        batches them (vLLM schedules up to 256 sequences at once by default; calls beyond what
        it decodes wait in its queue at no cost), twice the embedded engine's
        ``max_sequences`` (a waiting call is ready when a sequence ends; the serial engine
        takes one at a time), 16 for transformers in-process and custom models.

        Example:
            >>> BackendSpec(kind="openai", base_url="http://h/v1", model="m").default_concurrency()
            256
            >>> serial = BackendSpec(engine="serial")
            >>> BackendSpec().default_concurrency(), serial.default_concurrency()
            (16, 1)
        """
        if self.kind == "openai" or self.kind in VLLM_KINDS:
            return BATCHING_SERVER_CONCURRENCY
        if self.kind == "llamacpp":
            return 1 if self.engine == "serial" else 2 * self.max_sequences
        return 16

    @model_validator(mode="after")
    def _settings_fit_kind(self) -> BackendSpec:
        if self.base_url and self.kind != "openai":
            raise ValueError(f"--base-url needs the openai backend, not {self.kind}")
        if self.engine_args and self.kind not in VLLM_KINDS:
            raise ValueError(f"--engine-arg needs a vllm backend, not {self.kind}")
        if (self.adapter or self.device) and self.kind != "hf":
            raise ValueError(f"--adapter and --device need the hf backend, not {self.kind}")
        return self

    def resolved(self) -> BackendSpec:
        """The same backend with the default local model named, so a saved run keeps its model.

        Example:
            >>> BackendSpec(kind="openai", base_url="http://h/v1", model="m").resolved().model
            'm'
        """
        if self.adapter:
            from tmas.llm.hf.model_loading import adapter_folder

            folder = os.path.abspath(adapter_folder(self.adapter))
            if folder != self.adapter:
                return self.model_copy(update={"adapter": folder}).resolved()
        if self.kind not in LOCAL_KINDS or self.model not in (None, "default"):
            return self
        from tmas.llm.model_files import qwen_available

        return self.model_copy(update={"model": "qwen" if qwen_available() else "smollm2"})

    def identity(self) -> dict[str, object]:
        """The settings that decide what the models answer (not timeouts, threads, memory,
        parallelism or where the API key comes from): kind, model, URL, the context size of a
        local engine and vLLM's other answer-changing options (``dtype``, ...).

        Example:
            >>> BackendSpec(kind="openai", base_url="http://h/v1", model="m").identity()
            {'kind': 'openai', 'model': 'm', 'base_url': 'http://h/v1'}
        """
        found: dict[str, object] = {"kind": self.kind, "model": self.model}
        if self.base_url:
            found["base_url"] = self.base_url
        if self.kind in ("llamacpp", *VLLM_KINDS):
            found["n_ctx"] = self.n_ctx
        if self.adapter:
            found["adapter"] = self.adapter
        if self.kind in VLLM_KINDS:
            from tmas.llm.vllm.options import RESOURCE_OPTIONS

            answering = {k: v for k, v in self.engine_args.items() if k not in RESOURCE_OPTIONS}
            if answering:
                found["engine_args"] = answering
        return found

    def describe(self) -> str:
        """One line for humans.

        Example:
            >>> BackendSpec().describe()
            'llamacpp:default'
        """
        where = f" @ {self.base_url}" if self.base_url else ""
        return f"{self.kind}:{self.model or 'default'}{where}"


class CustomModelError(ValueError):
    """A run's models were chat models passed from Python: they cannot be rebuilt from the
    saved settings, so the run continues only where the caller passes them again."""


def custom_backend(
    main: BaseChatModel, overrides: Mapping[str, BaseChatModel] | None = None
) -> BackendSpec:
    """The saved description of chat models a Python caller passed (never a secret: a class
    name and model name, and for an endpoint its URL).

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> custom_backend(ScriptedChatModel(), {"verifier": ScriptedChatModel()}).model
        'ScriptedChatModel; verifier: ScriptedChatModel'
    """
    described = [describe_model(main)]
    described += [f"{role}: {describe_model(model)}" for role, model in (overrides or {}).items()]
    return BackendSpec(kind="custom", model="; ".join(described))


def backend_from_env() -> BackendSpec:
    """The default backend: the OpenAI-compatible endpoint ``TMAS_BASE_URL`` (model
    ``TMAS_MODEL``) when set, as on the command line; else the embedded llama.cpp model
    (``TMAS_MODEL`` may name it).

    Example:
        >>> backend_from_env().kind in ("llamacpp", "openai")
        True
    """
    base_url = os.environ.get("TMAS_BASE_URL")
    model = os.environ.get("TMAS_MODEL")
    if base_url:
        return BackendSpec(kind="openai", base_url=base_url, model=model)
    return BackendSpec(kind="llamacpp", model=model).resolved()


def require_module(module: str, hint: str) -> None:
    """Fail early, before a run is saved, when a backend's package is not installed.

    Example:
        >>> require_module("json", "")
        >>> require_module("no_such_module_here", "pip install it")
        Traceback (most recent call last):
        ...
        ValueError: no_such_module_here is not installed: pip install it
    """
    if importlib.util.find_spec(module) is None:
        raise ValueError(f"{module} is not installed: {hint}")


def _openai_model(
    base_url: str, model: str, spec: BackendSpec, max_tokens: int, temperature: float
) -> BaseChatModel:
    from tmas.llm.openai_compat import make_openai_chat_model

    return make_openai_chat_model(
        base_url=base_url,
        model=model,
        api_key_env=spec.api_key_env,
        max_tokens=max_tokens,
        temperature=temperature,
        timeout=spec.timeout_s,
        max_retries=0,
    )


def _vllm_model(spec: BackendSpec, config: TMASConfig) -> BaseChatModel:
    from tmas.llm.vllm.models import INSTALL_HINT, in_process_chat_model, server_chat_model

    require_module("vllm", INSTALL_HINT)
    if spec.kind == "vllm-server":
        return server_chat_model(
            spec.model,
            spec.engine_args,
            spec.n_ctx,
            max_tokens=config.solver_max_tokens,
            temperature=config.temperature,
            timeout_s=spec.timeout_s,
            api_key_env=spec.api_key_env,
        )
    return in_process_chat_model(
        spec.model,
        spec.engine_args,
        spec.n_ctx,
        max_tokens=config.solver_max_tokens,
        temperature=config.temperature,
        seed=config.seed,
        timeout_s=spec.timeout_s,
    )


def _hf_model(spec: BackendSpec, config: TMASConfig) -> BaseChatModel:
    from tmas.llm.hf.model_loading import INSTALL_HINT

    for module in ("torch", "transformers"):
        require_module(module, INSTALL_HINT)
    if spec.adapter:
        require_module("peft", INSTALL_HINT)
    from tmas.llm.hf.model_loading import load_model
    from tmas.llm.hf.transformers_chat import ChatHF

    load_model(spec.model, spec.adapter, spec.device)  # a bad model or adapter fails here
    return ChatHF(
        model=spec.model or "default",
        adapter=spec.adapter,
        device=spec.device,
        max_tokens=config.solver_max_tokens,
        temperature=config.temperature,
        seed=config.seed,
    )


def make_main_model(spec: BackendSpec, config: TMASConfig) -> BaseChatModel:
    """The main chat model of ``spec`` (the solver's, and every role's without an override).

    Raises ``ValueError`` for settings that cannot work (an openai backend without a URL), and
    ``CustomModelError`` for models a Python caller passed.
    """
    if spec.kind == "custom":
        raise CustomModelError(
            f"the models of this run were passed from Python ({spec.model}) and cannot be "
            "rebuilt from its saved settings; continue it from Python with the same models: "
            "tmas.resume(RUN_ID, llm=MODEL)"
        )
    if spec.kind == "openai":
        if not spec.base_url or not spec.model:
            raise ValueError("the openai backend needs --base-url and --model")
        return _openai_model(
            spec.base_url, spec.model, spec, config.solver_max_tokens, config.temperature
        )
    if spec.kind in VLLM_KINDS:
        return _vllm_model(spec, config)
    if spec.kind == "hf":
        return _hf_model(spec, config)
    require_module("llama_cpp", "pip install 'tmas[local]'")
    from tmas.llm.llamacpp import ChatLlamaCpp
    from tmas.llm.model_files import resolve_local_model

    return ChatLlamaCpp(
        model_path=str(resolve_local_model(spec.model)),
        n_ctx=spec.n_ctx,
        n_threads=spec.n_threads,
        engine=spec.engine,
        max_sequences=spec.max_sequences,
        max_tokens=config.solver_max_tokens,
        temperature=config.temperature,
        seed=config.seed,
    )


def _client_budget(config: TMASConfig, role: Role) -> int:
    """The answer budget a role's own client defaults to (each call sends its own): the role's,
    where this process knows it, else the solver's (a role a topology declares)."""
    try:
        return config.max_tokens_for(role)
    except ValueError:
        return config.solver_max_tokens


def _role_adapter_model(
    spec: BackendSpec, config: TMASConfig, role: Role, settings: RoleModel
) -> BaseChatModel:
    """The hf model of a role with its own adapter (``none``: the base weights), on the role's
    own model when it names one."""
    if spec.kind != "hf" or settings.base_url is not None:
        served = "a served model" if settings.base_url is not None else spec.kind
        raise ValueError(f"the {role} role's adapter needs the hf backend, not {served}")
    own = None if settings.adapter == "none" else settings.adapter
    update = {"adapter": own, "model": settings.model or spec.model}
    return make_main_model(spec.model_copy(update=update).resolved(), config)


def make_router(spec: BackendSpec, config: TMASConfig) -> ModelRouter:
    """A router with the main model and one model per role that ``config.roles`` overrides.

    A role override with a ``base_url`` or a ``model`` gets its own client: an
    OpenAI-compatible one when a URL is known (its own or the backend's), otherwise a model of
    the backend's own kind. On the hf backend a role's ``adapter`` gives it its own LoRA
    adapter (``none``: the base weights), for example a trained final agent among base ones.
    """
    main = make_main_model(spec, config)
    overrides: dict[Role, BaseChatModel] = {}
    for role, settings in config.roles.items():
        if settings.adapter is not None:
            overrides[role] = _role_adapter_model(spec, config, role, settings)
            continue
        if settings.base_url is None and settings.model is None:
            continue
        temperature = (
            settings.temperature if settings.temperature is not None else config.temperature
        )
        base_url = settings.base_url or spec.base_url
        if base_url is not None:
            model = settings.model or spec.model
            if model is None:
                raise ValueError(f"the {role} override needs a model name")
            overrides[role] = _openai_model(
                base_url, model, spec, _client_budget(config, role), temperature
            )
        else:
            overrides[role] = make_main_model(
                spec.model_copy(update={"model": settings.model}), config
            )
    return ModelRouter.for_config(main, overrides, config)
