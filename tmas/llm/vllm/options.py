"""vLLM engine options: parsed from ``KEY=VALUE`` text, checked against vLLM's own fields, and
completed with defaults that work on both a GPU and a CPU build of vLLM."""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# Options that change how much hardware an engine uses or how fast it runs, never what a
# model answers: a resumed run may change them freely, and they are left out of a backend's
# identity.
RESOURCE_OPTIONS = frozenset(
    {
        "gpu_memory_utilization",
        "kv_cache_memory_bytes",
        "swap_space",
        "cpu_offload_gb",
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "data_parallel_size",
        "distributed_executor_backend",
        "max_num_seqs",
        "max_num_batched_tokens",
        "enable_chunked_prefill",
        "enable_prefix_caching",
        "enforce_eager",
        "disable_log_stats",
        "block_size",
    }
)

# On a CPU the memory fraction is one of the machine's RAM, and vLLM's GPU default (0.9) is
# refused; a third of the RAM leaves room for the model, the graph and the rest of the host.
CPU_MEMORY_FRACTION = 0.3
# On a CPU, compiling the model (vLLM's default) made the engine start 3.5 times slower (234 s
# against 67 s for SmolLM2 on 2 cores) for 11% more decode speed: CPU engines run eagerly.
# vLLM's CPU build also kills the engine ("CPU Generator does not use offset") when a seeded
# request's prompt is split over steps (chunked prefill): CPU engines prefill whole prompts,
# with a step budget that holds the longest one.
CPU_DEFAULTS = {
    "gpu_memory_utilization": CPU_MEMORY_FRACTION,
    "enforce_eager": True,
    "enable_chunked_prefill": False,
}
CPU_STEP_TOKENS = 4096
# Without bfloat16 instructions (AVX512-BF16 or AMX), vLLM's CPU build computes bfloat16
# slowly: float32 decoded SmolLM2 1.9 times faster (29.2 against 15.5 tokens/s, 8 requests on
# 2 AVX2 cores) and prefilled long prompts in seconds instead of minutes.
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def normalize_key(key: str) -> str:
    """An option name as vLLM's Python fields spell it (``max-model-len`` → ``max_model_len``).

    Example:
        >>> normalize_key(" --max-model-len ")
        'max_model_len'
    """
    return key.strip().lstrip("-").replace("-", "_")


def engine_field_names() -> set[str]:
    """The option names vLLM's ``AsyncEngineArgs`` accepts (needs vLLM installed)."""
    from vllm.engine.arg_utils import AsyncEngineArgs

    return {field.name for field in dataclasses.fields(AsyncEngineArgs)}


def check_option_names(options: Mapping[str, Any], known: set[str]) -> None:
    """Raise ValueError naming each option vLLM does not know, with the closest known name.

    Example:
        >>> check_option_names({"max_model_lenn": 1}, {"max_model_len", "dtype"})
        Traceback (most recent call last):
        ...
        ValueError: unknown vLLM engine option max_model_lenn (did you mean max_model_len?)
    """
    unknown = sorted(set(options) - known)
    if not unknown:
        return
    described = []
    for name in unknown:
        close = difflib.get_close_matches(name, sorted(known), n=1)
        described.append(f"{name} (did you mean {close[0]}?)" if close else name)
    plural = "s" if len(unknown) > 1 else ""
    raise ValueError(f"unknown vLLM engine option{plural} {', '.join(described)}")


def cpu_has_bf16(cpuinfo: str | None = None) -> bool:
    """True when the CPU has bfloat16 instructions (read from ``/proc/cpuinfo``).

    Example:
        >>> cpu_has_bf16("flags : fpu avx2"), cpu_has_bf16("flags : avx2 amx_bf16")
        (False, True)
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return False
    lines = [line for line in cpuinfo.splitlines() if line.startswith("flags")]
    flags = {flag for line in lines for flag in line.split()}
    return any(flag in flags for flag in BF16_CPU_FLAGS)


def engine_options(
    model: str,
    options: Mapping[str, Any],
    context_length: int | None,
    on_cpu: bool,
    cpu_bf16: bool = False,
) -> dict[str, Any]:
    """The keyword arguments of vLLM's ``AsyncEngineArgs``: the caller's ``options`` over
    defaults (prefix caching on, no per-step stats logging, the context length as
    ``max_model_len``; on a CPU a third of the RAM for the engine, no compilation, whole
    prompts per step, and float32 unless the CPU has bfloat16 instructions).

    Example:
        >>> engine_options("m", {"dtype": "float32"}, 2048, on_cpu=True)["gpu_memory_utilization"]
        0.3
        >>> engine_options("m", {"max_model_len": 1024}, 2048, on_cpu=False)["max_model_len"]
        1024
    """
    merged: dict[str, Any] = {
        "model": model,
        "enable_prefix_caching": True,
        "disable_log_stats": True,
    }
    if context_length is not None:
        merged["max_model_len"] = context_length
    if on_cpu:
        merged.update(CPU_DEFAULTS)
        if not cpu_bf16:
            merged["dtype"] = "float32"
        if "kv_cache_memory_bytes" in options:
            del merged["gpu_memory_utilization"]
    merged.update(options)
    merged["model"] = model
    if merged.get("enable_chunked_prefill") is False and "max_num_batched_tokens" not in options:
        merged["max_num_batched_tokens"] = max(merged.get("max_model_len") or 0, CPU_STEP_TOKENS)
    return merged


def server_flags(options: Mapping[str, Any]) -> list[str]:
    """Engine options as command-line flags of vLLM's OpenAI server.

    Example:
        >>> server_flags({"max_model_len": 2048, "enforce_eager": True, "x": False})
        ['--max-model-len', '2048', '--enforce-eager', '--no-x']
        >>> server_flags({"limit_mm_per_prompt": {"image": 0}})
        ['--limit-mm-per-prompt', '{"image": 0}']
    """
    flags: list[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            flags.append(flag)
        elif value is False:
            flags.append("--no-" + key.replace("_", "-"))
        elif isinstance(value, (dict, list)):
            flags += [flag, json.dumps(value)]
        else:
            flags += [flag, str(value)]
    return flags
