"""What the loaded llama.cpp build does on this CPU, where it matters for running safely.

llama.cpp built for a CPU with AMX (Intel Sapphire Rapids and later; ``-march=native`` turns it
on) repacks quantised weights into an AMX buffer whose matrix multiply crashes the process on
the first decode (upstream issue ggml-org/llama.cpp#20824, open without a fix). Loading the
weights without llama.cpp's *extra buffer types* keeps them out of that buffer; the plain CPU
kernels (AVX-512 there) then do the work.
"""

from __future__ import annotations

from typing import Any

AMX_MARK = "AMX_INT8 = 1"


def rebuild_hint() -> str:
    """The command that rebuilds the installed llama-cpp-python without AMX.

    Example:
        >>> "CFLAGS=-mno-amx-int8" in rebuild_hint()
        True
    """
    from importlib import metadata

    try:
        pinned = f"llama-cpp-python=={metadata.version('llama-cpp-python')}"
    except metadata.PackageNotFoundError:
        pinned = "llama-cpp-python"
    return (
        "rebuild llama-cpp-python without AMX: CFLAGS=-mno-amx-int8 CXXFLAGS=-mno-amx-int8 "
        f"pip install --force-reinstall --no-cache-dir --no-deps {pinned}"
    )


def system_info(lib: Any) -> str:
    """llama.cpp's one-line description of the CPU features it was built with.

    Example:
        >>> from types import SimpleNamespace
        >>> system_info(SimpleNamespace(llama_print_system_info=lambda: b"CPU : AVX2 = 1 |"))
        'CPU : AVX2 = 1 |'
    """
    info = lib.llama_print_system_info()
    return info.decode("utf-8", errors="replace") if isinstance(info, bytes) else str(info)


def uses_amx(info: str) -> bool:
    """Whether a build's system info says it multiplies matrices with AMX.

    Example:
        >>> uses_amx("CPU : AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | OPENMP = 1 |")
        True
        >>> uses_amx("CPU : AVX2 = 1 | AVX512 = 1 | OPENMP = 1 |")
        False
    """
    return AMX_MARK in info


def extra_buffers_for(info: str, requested: bool | None) -> bool:
    """Whether to load weights with llama.cpp's extra buffer types (weight repacking):
    ``requested`` when given, else on unless the build uses AMX.

    Example:
        >>> extra_buffers_for("CPU : AMX_INT8 = 1 |", None), extra_buffers_for("CPU :", None)
        (False, True)
        >>> extra_buffers_for("CPU : AMX_INT8 = 1 |", True)
        True
    """
    if requested is not None:
        return requested
    return not uses_amx(info)
