"""Loading plugins: user modules whose ``register_*`` calls add node types, roles, prompts,
planners, stop conditions and selection rules.

A plugin is named as users write it: a module name (importable, or a ``.py`` file of that
name in the current directory) or the path of a ``.py`` file. A run saves the reference
:func:`load_plugin` returns (a file's absolute path), so ``tmas resume`` imports it again from
any directory.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType


class PluginError(ValueError):
    """A plugin cannot be found or imported."""


def is_path(ref: str) -> bool:
    """Whether a plugin reference names a file rather than a module.

    Example:
        >>> is_path("my_nodes"), is_path("./my_nodes.py"), is_path("pkg.nodes")
        (False, True, False)
    """
    return ref.endswith(".py") or os.sep in ref or "/" in ref


def _module_name(path: Path) -> str:
    """The module name a plugin file is imported under: its stem, unless a different module
    already holds that name (then the stem with a digest of the path)."""
    name = path.stem if path.stem.isidentifier() else "plugin"
    loaded = sys.modules.get(name)
    if loaded is None or Path(getattr(loaded, "__file__", "") or "").resolve() == path:
        return name
    return f"{name}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"


def _import_file(path: Path) -> ModuleType:
    name = _module_name(path)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"cannot import plugin {str(path)!r}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.append(folder)  # so the plugin may import its neighbours
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _import_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        here = os.getcwd()
        missing = exc.name or name
        if here in sys.path or name.split(".")[0] != missing.split(".")[0]:
            raise
    sys.path.append(here)  # a module beside the user, as ``python -m`` would find it
    importlib.invalidate_caches()
    return importlib.import_module(name)


def load_plugin(ref: str) -> str:
    """Import plugin ``ref`` (a module name, or a ``.py`` file path) so that its ``register_*``
    calls take effect; loading it again is harmless. Returns the reference to save with a run:
    the module name, or the file's absolute path.

    Example:
        >>> load_plugin("tmas.roles")
        'tmas.roles'
        >>> load_plugin("no_such_plugin")
        Traceback (most recent call last):
        ...
        tmas.plugins.PluginError: cannot import plugin 'no_such_plugin': No module named ...
    """
    try:
        if is_path(ref):
            path = Path(ref).expanduser().resolve()
            if not path.is_file():
                raise PluginError(f"cannot import plugin {ref!r}: no such file {path}")
            _import_file(path)
            return str(path)
        _import_module(ref)
        return ref
    except PluginError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the user's module is one message
        reason = str(exc) if isinstance(exc, ImportError) else f"{type(exc).__name__}: {exc}"
        raise PluginError(f"cannot import plugin {ref!r}: {reason}") from None


def plugin_source(ref: str) -> Path | None:
    """The source file of plugin ``ref`` (None when it cannot be found).

    Example:
        >>> plugin_source("tmas.roles").name, plugin_source("no_such_module_here")
        ('roles.py', None)
    """
    if is_path(ref):
        path = Path(ref).expanduser()
        return path if path.is_file() else None
    loaded = sys.modules.get(ref)
    origin = getattr(loaded, "__file__", None) if loaded is not None else None
    if origin is None:
        try:
            found = importlib.util.find_spec(ref)
        except (ImportError, ValueError):
            return None
        origin = found.origin if found is not None else None
    return Path(origin) if origin and Path(origin).is_file() else None
