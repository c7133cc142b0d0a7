"""The model and backend options, declared once for every command that takes a model
(``solve``, ``eval``, ``serve``, ``resume``, ``train``, ``orchrm``) and parsed into one
:class:`ModelOptions`.

A command takes the group with :func:`model_options` in the place of its parameter
``models: ModelOptions``: all the options, or the ones it names, with the defaults and help
that differ for it (:func:`training_options` for the training commands).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tmas.cli.inputs import build_backend, engine_args, role_settings
from tmas.cli.option_group import option, option_group
from tmas.llm.backend import BackendSpec


@dataclass(frozen=True)
class ModelOptions:
    """The model options as parsed: which backend, models and engine settings a command uses
    (each field is the option of the same name; a command that does not take one keeps its
    default).

    Example:
        >>> ModelOptions(backend="openai", model="m", base_url="http://h/v1").model
        'm'
    """

    backend: str = option(
        "llamacpp",
        help="llamacpp | openai | vllm (in-process) | vllm-server (managed) | hf (transformers)",
    )
    model: str | None = option(
        None,
        envvar="TMAS_MODEL",
        help="qwen, smollm2 or a GGUF path; a served model name; vLLM, hf: a checkpoint or hub id",
    )
    base_url: str | None = option(None, envvar="TMAS_BASE_URL", help="OpenAI-compatible endpoint")
    role_model: tuple[str, ...] = option((), help="ROLE=MODEL (repeatable)")
    role_base_url: tuple[str, ...] = option((), help="ROLE=URL (repeatable)")
    n_ctx: int | None = option(
        4096, help="context window of the local engine (vLLM: max_model_len)"
    )
    threads: int | None = option(None, help="CPU threads of the embedded model")
    engine: str = option(
        "batched",
        help="embedded model's engine: batched (concurrent calls decoded together, shared "
        "prompt prefixes) or serial (one call at a time, for comparison)",
    )
    max_sequences: int = option(
        8, help="calls the embedded engine decodes together", min=1, max=256
    )
    engine_arg: tuple[str, ...] = option(
        (), help="KEY=VALUE option of the vLLM engine (repeatable), e.g. enforce_eager=true"
    )
    gpu_memory_utilization: float | None = option(
        None, min=0.01, max=1.0, help="vLLM: share of the accelerator's memory (of RAM on a CPU)"
    )
    tensor_parallel_size: int | None = option(
        None, min=1, help="vLLM: accelerators each layer is split over"
    )
    pipeline_parallel_size: int | None = option(
        None, min=1, help="vLLM: accelerators the layers are staged over"
    )
    dtype: str | None = option(None, help="vLLM: weight dtype (auto, bfloat16, float16, float32)")
    adapter: str | None = option(None, help="hf: a LoRA adapter folder (tmas train grpo or latent)")
    device: str | None = option(None, help="hf: cpu, cuda or cuda:N (default: auto)")

    def engine_options(self) -> dict[str, Any]:
        """The vLLM engine options: ``--engine-arg`` pairs, the named options winning.

        Example:
            >>> ModelOptions(engine_arg=("enforce-eager=true",), dtype="half").engine_options()
            {'enforce_eager': True, 'dtype': 'half'}
        """
        return engine_args(
            self.engine_arg,
            self.gpu_memory_utilization,
            self.tensor_parallel_size,
            self.pipeline_parallel_size,
            self.dtype,
        )

    def backend_fields(self) -> dict[str, Any]:
        """The fields of the backend settings these options give (not checked yet).

        Example:
            >>> fields = ModelOptions(backend="vllm", gpu_memory_utilization=0.5).backend_fields()
            >>> fields["kind"], fields["n_threads"], fields["engine_args"]
            ('vllm', None, {'gpu_memory_utilization': 0.5})
        """
        named = ("model", "base_url", "n_ctx", "engine", "max_sequences", "adapter", "device")
        return {
            "kind": self.backend,
            "n_threads": self.threads,
            **{name: getattr(self, name) for name in named},
            "engine_args": self.engine_options(),
        }

    def backend_spec(self) -> BackendSpec:
        """The checked backend settings, the default local model named
        (:func:`tmas.cli.inputs.build_backend`); ConfigError for a bad value.

        Example:
            >>> ModelOptions(model="m", base_url="http://h/v1").backend_spec().describe()
            'openai:m @ http://h/v1'
        """
        return build_backend(**self.backend_fields())

    def role_settings(self) -> dict[str, dict[str, str]]:
        """The per-role models and endpoints; ConfigError for a pair that is not ROLE=VALUE.

        Example:
            >>> ModelOptions(role_model=("verifier=judge",)).role_settings()["verifier"]
            {'model': 'judge'}
        """
        return role_settings(self.role_model, self.role_base_url)

    def corrections(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """What these options correct in a saved run's plan (a resume's ``--model``,
        ``--base-url``, ``--n-ctx``, engine and per-role options): the settings (its roles'
        models) and the backend fields, each None when none is given; the plan merges them
        (:meth:`tmas.graphs.run_plan.RunPlan.revised`).

        Example:
            >>> ModelOptions(n_ctx=None).corrections()
            (None, None)
            >>> ModelOptions(model="fixed", n_ctx=None, role_model=("verifier=v",)).corrections()
            ({'roles': {'verifier': {'model': 'v'}}}, {'model': 'fixed'})
        """
        named = {"model": self.model, "base_url": self.base_url, "n_ctx": self.n_ctx,
                 "engine_args": self.engine_options()}  # fmt: skip
        backend = {key: value for key, value in named.items() if value}
        roles = self.role_settings()
        return ({"roles": roles} if roles else None), (backend or None)


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

# The training commands name a base model (no environment variable: a training run names
# what it trains) and a device of their own.
TRAINING_CHANGES: dict[str, dict[str, Any]] = {
    "model": {
        "default": "smollm2",
        "help": "base model: smollm2, qwen, a checkpoint",
        "envvar": None,
    },
    "device": {"help": "cpu, cuda (default: auto)"},
}


def model_options(
    *names: str, into: str = "models", prefix: str = "", **changes: Mapping[str, Any]
) -> Decorator:
    """A decorator giving a command the model options (all, or ``names``) in the place of its
    parameter ``into``, with per-command ``changes`` (:func:`tmas.cli.option_group.option_group`).

    Example:
        >>> import inspect
        >>> @model_options("model", "n_ctx", n_ctx={"default": None})
        ... def check(*, models: ModelOptions) -> ModelOptions:
        ...     return models
        >>> list(inspect.signature(check).parameters)
        ['model', 'n_ctx']
        >>> check(model="m").model, check().n_ctx, check().backend
        ('m', None, 'llamacpp')
    """
    return option_group(ModelOptions, names, into=into, prefix=prefix, changes=changes)


def training_options(*names: str, **changes: Mapping[str, Any]) -> Decorator:
    """:func:`model_options` as the training commands take them: ``--model`` (smollm2 by
    default) and ``--device`` unless ``names`` say otherwise.

    Example:
        >>> @training_options()
        ... def train(*, models: ModelOptions) -> tuple[str | None, str | None]:
        ...     return models.model, models.device
        >>> train(device="cpu")
        ('smollm2', 'cpu')
    """
    chosen = names or ("model", "device")
    changed = {*TRAINING_CHANGES.keys() & set(chosen), *changes}
    merged = {name: {**TRAINING_CHANGES.get(name, {}), **changes.get(name, {})} for name in changed}
    return model_options(*chosen, **merged)
