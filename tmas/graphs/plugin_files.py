"""Loading plugins: user modules whose ``register_*`` calls add node types, roles, prompts,
planners, stop conditions and selection rules.

A plugin is named as users write it: a module name (importable, or a ``.py`` file of that
name in the current directory) or the path of a ``.py`` file. A run saves the reference
:func:`load_plugin` returns (a file's absolute path, also for a module found in the current
directory), so ``tmas resume`` imports it again from any directory. A plugin file is imported
under a private module name, so a file called ``ray.py`` hides no installed package.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import threading
from pathlib import Path
from types import ModuleType

_LOCK = threading.RLock()  # one import at a time: a half-run module is never seen
_BESIDE: set[str] = set()  # modules found only in the current directory
_BY_PATH: dict[Path, ModuleType] = {}  # plugin modules by the resolved path of their file


class PluginError(ValueError):
    """A plugin cannot be found or imported."""


def is_path(ref: str) -> bool:
    """Whether a plugin reference names a file rather than a module.

    Example:
        >>> is_path("my_nodes"), is_path("./my_nodes.py"), is_path("pkg.nodes")
        (False, True, False)
    """
    return ref.endswith(".py") or os.sep in ref or "/" in ref


def private_name(path: Path) -> str:
    """The module name a plugin file is imported under: private and the same in every process.

    Example:
        >>> private_name(Path("/work/judge.py")).startswith("tmas_plugin_judge_")
        True
    """
    stem = path.stem if path.stem.isidentifier() else "file"
    return f"tmas_plugin_{stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"


def _loaded_from(path: Path) -> ModuleType | None:
    """A module already imported from ``path`` (by name or as a file), if any; once found, it
    is remembered, so later calls (every run start loads its plugins) look nothing up."""
    if path in _BY_PATH:
        return _BY_PATH[path]
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if origin and os.path.basename(origin) == path.name and Path(origin).resolve() == path:
            _BY_PATH[path] = module
            return module
    return None


def _import_file(path: Path) -> ModuleType:
    loaded = _loaded_from(path)
    if loaded is not None:
        return loaded
    name = private_name(path)
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
    _BY_PATH[path] = module
    return module


def _import_module(name: str) -> tuple[ModuleType, bool]:
    """The module ``name`` and whether it was found only in the current directory."""
    try:
        return importlib.import_module(name), name in _BESIDE
    except ModuleNotFoundError as exc:
        here = os.getcwd()
        missing = exc.name or name
        if here in sys.path or name.split(".")[0] != missing.split(".")[0]:
            raise
    sys.path.append(here)  # a module beside the user, as ``python -m`` would find it
    importlib.invalidate_caches()
    module = importlib.import_module(name)
    _BESIDE.add(name)
    return module, True


def load_plugin(ref: str) -> str:
    """Import plugin ``ref`` (a module name, or a ``.py`` file path) so that its ``register_*``
    calls take effect; loading it again is harmless. Returns the reference to save with a run:
    the module name, or a file's absolute path (a single-file module found only in the current
    directory is saved by its path, so a resume elsewhere finds it).

    Example:
        >>> load_plugin("tmas.roles")
        'tmas.roles'
        >>> load_plugin("no_such_plugin")
        Traceback (most recent call last):
        ...
        tmas.graphs.plugin_files.PluginError: cannot import plugin 'no_such_plugin': ...
    """
    with _LOCK:
        try:
            if is_path(ref):
                path = Path(ref).expanduser().resolve()
                if not path.is_file():
                    raise PluginError(f"cannot import plugin {ref!r}: no such file {path}")
                _import_file(path)
                return str(path)
            module, beside = _import_module(ref)
            origin = getattr(module, "__file__", None)
            if beside and origin and Path(origin).name != "__init__.py":
                return str(Path(origin).resolve())
            return ref
        except PluginError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of the user's module: one message
            reason = str(exc) if isinstance(exc, ImportError) else f"{type(exc).__name__}: {exc}"
            raise PluginError(f"cannot import plugin {ref!r}: {reason}") from None


def module_of(ref: str) -> ModuleType | None:
    """The loaded module of plugin reference ``ref`` (None when it is not loaded).

    Example:
        >>> module_of("tmas.roles").__name__
        'tmas.roles'
    """
    if is_path(ref):
        return _loaded_from(Path(ref).expanduser().resolve())
    return sys.modules.get(ref)


def plugin_of_module(name: str) -> str | None:
    """The plugin reference of module ``name`` (the owner of a registry entry): a single-file
    module's absolute path, a package's name; None for the package's own and for code that
    cannot be imported again (a script's ``__main__``, a notebook).

    Example:
        >>> plugin_of_module("tmas.roles") is None, plugin_of_module("json")
        (True, 'json')
    """
    if not name or name == "tmas" or name.startswith(("tmas.", "__main__")):
        return None
    origin = getattr(sys.modules.get(name), "__file__", None)
    if not origin:
        return None
    if Path(origin).name == "__init__.py":  # a package: imported by its name
        return name
    return str(Path(origin).resolve())  # a single file: found again from any directory


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


def plugin_digest(ref: str) -> str | None:
    """A digest of a plugin's source file (None when it cannot be found).

    Example:
        >>> plugin_digest("tmas.roles") is not None, plugin_digest("no_such_module_here")
        (True, None)
    """
    source = plugin_source(ref)
    return hashlib.sha256(source.read_bytes()).hexdigest()[:16] if source is not None else None
