"""llama.cpp's C API as llama-cpp-python's ctypes module exposes it, with the few helpers
the engine needs for arrays, buffers, strings and logging.

The engine calls ``binding.lib.llama_decode(...)`` and friends by their C names, so another
binding of the same C API fits behind this class. (``llama-cpp-py-sync``'s prebuilt CPU
wheels were evaluated: up to 0.11739 their libraries need glibc 2.38 despite their
manylinux2014 tag, so they do not load on Debian 12; see ``benchmarks/RESULTS.md``.)
"""

from __future__ import annotations

import ctypes
import importlib.util
from dataclasses import dataclass
from typing import Any

_INSTALL_HINT = "pip install 'tmas[local]'"


@dataclass
class LlamaBinding:
    """The C library and the helpers that depend on how it is bound.

    Example:
        >>> binding = load_binding()
        >>> len(binding.token_room(3))
        3
    """

    lib: Any
    null: Any = None
    _log_callback: Any = None

    def token_room(self, size: int) -> Any:
        """A zeroed C array for ``size`` tokens."""
        return (ctypes.c_int32 * size)()

    def char_buffer(self, size: int) -> Any:
        """A writable ``char`` buffer of ``size`` bytes."""
        return ctypes.create_string_buffer(size)

    def read_bytes(self, buffer: Any, size: int) -> bytes:
        """The first ``size`` bytes of a buffer made by ``char_buffer``."""
        return buffer.raw[:size]

    def c_string(self, pointer: Any) -> str | None:
        """A ``const char *`` returned by the library, as text (``None`` for NULL)."""
        return pointer.decode("utf-8", errors="replace") if pointer else None

    def silence_logs(self) -> None:
        """Drop llama.cpp's log lines (loading a model prints hundreds of them)."""
        if self._log_callback is None:
            self._log_callback = self.lib.llama_log_callback(lambda level, text, data: None)
            self.lib.llama_log_set(self._log_callback, self.null)


_loaded: LlamaBinding | None = None


def load_binding() -> LlamaBinding:
    """The binding, loaded and initialised once per process.

    Raises ``ImportError`` with the install command when llama-cpp-python is missing.
    """
    global _loaded
    if _loaded is None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ImportError(
                f"the embedded llama.cpp engine needs llama-cpp-python: {_INSTALL_HINT}"
            )
        import llama_cpp

        binding = LlamaBinding(lib=llama_cpp)
        binding.silence_logs()
        llama_cpp.llama_backend_init()
        _loaded = binding
    return _loaded
