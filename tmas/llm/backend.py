"""Backend settings (saved with a run) and the chat models built from them."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tmas.llm.bindings import RoleBinding
from tmas.llm.calls import describe_model
from tmas.roles import Role

if TYPE_CHECKING:  # the model stack loads when a router is made, not with the settings
    from langchain_core.language_models import BaseChatModel

    from tmas.llm.router import ModelRouter

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
    max_sequences: int = Field(
        default=8, ge=1, le=256, description="calls decoded together (hf: greedy calls)"
    )
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
    base_url: str, model: str, spec: BackendSpec, max_tokens: int, temperature: float | None
) -> BaseChatModel:
    from tmas.llm.openai_compat import make_endpoint_model

    return make_endpoint_model(
        base_url=base_url,
        model=model,
        api_key_env=spec.api_key_env,
        max_tokens=max_tokens,
        temperature=temperature,
        timeout=spec.timeout_s,
        max_retries=0,
    )


def _vllm_model(
    spec: BackendSpec, max_tokens: int, temperature: float | None, seed: int
) -> BaseChatModel:
    from tmas.llm.vllm.models import INSTALL_HINT, in_process_chat_model, server_chat_model

    require_module("vllm", INSTALL_HINT)
    if spec.kind == "vllm-server":
        return server_chat_model(
            spec.model,
            spec.engine_args,
            spec.n_ctx,
            max_tokens=max_tokens,
            temperature=temperature,
            timeout_s=spec.timeout_s,
            api_key_env=spec.api_key_env,
        )
    return in_process_chat_model(
        spec.model,
        spec.engine_args,
        spec.n_ctx,
        max_tokens=max_tokens,
        temperature=temperature,
        seed=seed,
        timeout_s=spec.timeout_s,
    )


def _hf_model(
    spec: BackendSpec, max_tokens: int, temperature: float | None, seed: int
) -> BaseChatModel:
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
        max_tokens=max_tokens,
        temperature=DEFAULT_TEMPERATURE if temperature is None else temperature,
        seed=seed,
        max_batch=spec.max_sequences,
    )


DEFAULT_TEMPERATURE = 0.7
"""The sampling temperature of a model built with none (the default of ``temperature``)."""


def make_chat_model(
    spec: BackendSpec,
    *,
    max_tokens: int,
    temperature: float | None = DEFAULT_TEMPERATURE,
    seed: int = 0,
) -> BaseChatModel:
    """The chat model of ``spec`` (its ``model`` on its ``kind``), answering with at most
    ``max_tokens`` tokens at ``temperature`` unless a call says otherwise.

    Raises ``ValueError`` for settings that cannot work (an openai backend without a URL), and
    ``CustomModelError`` for models a Python caller passed.

    Example:
        >>> make_chat_model(BackendSpec(kind="openai", model="m"), max_tokens=8)
        Traceback (most recent call last):
        ...
        ValueError: the openai backend needs --base-url and --model
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
        return _openai_model(spec.base_url, spec.model, spec, max_tokens, temperature)
    if spec.kind in VLLM_KINDS:
        return _vllm_model(spec, max_tokens, temperature, seed)
    if spec.kind == "hf":
        return _hf_model(spec, max_tokens, temperature, seed)
    require_module("llama_cpp", "pip install 'tmas[local]'")
    from tmas.llm.llamacpp import ChatLlamaCpp
    from tmas.llm.model_files import resolve_local_model

    return ChatLlamaCpp(
        model_path=str(resolve_local_model(spec.model)),
        n_ctx=spec.n_ctx,
        n_threads=spec.n_threads,
        engine=spec.engine,
        max_sequences=spec.max_sequences,
        max_tokens=max_tokens,
        temperature=DEFAULT_TEMPERATURE if temperature is None else temperature,
        seed=seed,
    )


def _bound_model(spec: BackendSpec, binding: RoleBinding, seed: int) -> BaseChatModel:
    """The chat model a binding names: on an endpoint an OpenAI-compatible client, else a
    model of the backend's own kind with the binding's model id and adapter."""
    if binding.kind == "openai" and binding.base_url is not None:
        return _openai_model(
            binding.base_url, binding.model, spec, binding.max_tokens, binding.temperature
        )
    update = {"model": binding.model, "adapter": binding.adapter}
    chosen = spec if spec.kind == "custom" else spec.model_copy(update=update).resolved()
    return make_chat_model(
        chosen, max_tokens=binding.max_tokens, temperature=binding.temperature, seed=seed
    )


def make_router(
    spec: BackendSpec, bindings: Mapping[Role, RoleBinding], seed: int = 0
) -> ModelRouter:
    """The router of a run: one chat model per distinct model its role ``bindings`` name
    (backend kind, model id, endpoint, adapter), the solver's as the main one, each role
    served by its own. Raises as :func:`make_chat_model` does.

    Example:
        >>> from tmas.llm.bindings import resolve_bindings
        >>> from tmas.roles import RoleBook
        >>> from tmas.config import TMASConfig
        >>> bindings = resolve_bindings(TMASConfig(), RoleBook.builtin(), kind="openai",
        ...                             model="m", base_url="http://127.0.0.1:9/v1")
        >>> make_router(BackendSpec(kind="openai", model="m", base_url="http://127.0.0.1:9/v1"),
        ...             bindings).binding("verifier").max_tokens
        256
    """
    from tmas.llm.router import ModelRouter

    models: dict[tuple[Any, ...], BaseChatModel] = {}
    by_role: dict[Role, BaseChatModel] = {}
    for role, binding in bindings.items():
        if binding.client() not in models:
            models[binding.client()] = _bound_model(spec, binding, seed)
        by_role[role] = models[binding.client()]
    main = by_role.get("solver") or _bound_model(spec, next(iter(bindings.values())), seed)
    return ModelRouter(main, by_role, bindings=bindings)
