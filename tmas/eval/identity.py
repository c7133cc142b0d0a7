"""What determines an evaluation's results, saved beside them so a rerun with other settings is
refused instead of mixing (or mislabelling) results.

The identity covers the topology spec (every node, parameter and edge), the config (sizes,
selection rule, budgets, per-role model overrides), the backend and the model of every role,
the plugins (module and a digest of its source) and the prompt templates. ``about`` records
the package version and is not compared.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from importlib import metadata
from pathlib import Path
from typing import Any

from tmas.config import TMASConfig
from tmas.graphs.spec import GraphSpec
from tmas.llm.backend import BackendSpec
from tmas.nodes import delm_prompts, prompts
from tmas.roles import ROLES

IDENTITY = "identity.json"
MAX_CHANGES_SHOWN = 6


class EvaluationMismatch(ValueError):
    """An evaluation folder holds results made with other settings."""


def _digest(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()[:16]


def prompt_digests() -> dict[str, str]:
    """A digest of every prompt template the bundled agents use, by name.

    Example:
        >>> "SOLVER_SYSTEM" in prompt_digests() and "WORKER_SYSTEM" in prompt_digests()
        True
    """
    found = {}
    for module in (prompts, delm_prompts):
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, str):
                found[name] = _digest(value)
    return dict(sorted(found.items()))


def plugin_digest(module: str) -> str | None:
    """A digest of a plugin module's source file (None when it cannot be found).

    Example:
        >>> plugin_digest("tmas.roles") is not None, plugin_digest("no_such_module_here")
        (True, None)
    """
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if found is None or not found.origin or not Path(found.origin).is_file():
        return None
    return _digest(Path(found.origin).read_bytes())


def role_models(config: TMASConfig, backend: BackendSpec) -> dict[str, str]:
    """The model that plays each role: the backend's, or the role's override.

    Example:
        >>> from tmas.config import RoleModel
        >>> config = TMASConfig(roles={"verifier": RoleModel(model="judge")})
        >>> role_models(config, BackendSpec(kind="openai", base_url="http://h/v1", model="m"))
        ... # doctest: +ELLIPSIS
        {'solver': 'openai:m @ http://h/v1', 'verifier': 'openai:judge @ http://h/v1', ...}
    """
    models = {}
    for role in ROLES:
        override = config.roles.get(role)
        model = (override.model if override else None) or backend.model or "default"
        url = (override.base_url if override else None) or backend.base_url
        models[role] = f"{backend.kind}:{model}" + (f" @ {url}" if url else "")
    return models


def evaluation_identity(
    spec: GraphSpec, config: TMASConfig, backend: BackendSpec, plugins: list[str]
) -> dict[str, Any]:
    """Everything that determines an evaluation's results, as plain JSON-able data.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> identity = evaluation_identity(load_bundled("pacore"), TMASConfig(), BackendSpec(
        ...     model="smollm2"), [])
        >>> identity["graph"], identity["backend"]["model"], identity["models"]["verifier"]
        ('pacore', 'smollm2', 'llamacpp:smollm2')
    """
    try:
        version = metadata.version("tmas")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {
        "graph": spec.name,
        "spec": spec.model_dump(by_alias=True, mode="json"),
        "config": config.model_dump(mode="json"),
        "backend": backend.identity(),
        "models": role_models(config, backend),
        "plugins": [{"module": m, "sha256": plugin_digest(m)} for m in plugins],
        "prompts": prompt_digests(),
        "about": {"tmas_version": version},
    }


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        flat = {}
        for i, item in enumerate(value):
            flat.update(_flatten(item, f"{prefix}.{i}"))
        return flat
    return {prefix: value}


def identity_changes(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """What differs between two identities, one ``key: old -> new`` line each (``about``
    left out).

    Example:
        >>> identity_changes({"backend": {"model": "qwen"}, "about": {"v": 1}},
        ...                  {"backend": {"model": "smollm2"}, "about": {"v": 2}})
        ["backend.model: 'qwen' -> 'smollm2'"]
    """
    old = _flatten({k: v for k, v in saved.items() if k != "about"})
    new = _flatten({k: v for k, v in current.items() if k != "about"})
    missing = object()
    return [
        f"{key}: {old.get(key, missing)!r} -> {new.get(key, missing)!r}".replace(
            repr(missing), "(none)"
        )
        for key in sorted(set(old) | set(new))
        if old.get(key, missing) != new.get(key, missing)
    ]


def read_identity(out_dir: Path) -> dict[str, Any] | None:
    """The identity saved in ``out_dir`` (None when there is none)."""
    path = out_dir / IDENTITY
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise EvaluationMismatch(f"{path} is damaged ({exc}); write to another --out") from None


def write_identity(out_dir: Path, identity: dict[str, Any]) -> None:
    """Save ``identity`` in ``out_dir`` (written whole or not at all)."""
    tmp = out_dir / f"{IDENTITY}.tmp"
    tmp.write_text(json.dumps(identity, indent=2, sort_keys=True), encoding="utf-8")
    tmp.replace(out_dir / IDENTITY)


def check_identity(out_dir: Path, identity: dict[str, Any]) -> None:
    """Refuse to go on in ``out_dir`` when it holds results of other settings, naming what
    changed.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> write_identity(folder, {"config": {"epsilon": 0.2}})
        >>> check_identity(folder, {"config": {"epsilon": 0.5}})
        Traceback (most recent call last):
        ...
        tmas.eval.identity.EvaluationMismatch: ... config.epsilon: 0.2 -> 0.5; rerun with ...
    """
    saved = read_identity(out_dir)
    if saved is None:
        return
    changes = identity_changes(saved, identity)
    if not changes:
        return
    shown = changes[:MAX_CHANGES_SHOWN]
    more = len(changes) - len(shown)
    raise EvaluationMismatch(
        f"{out_dir} holds an evaluation made with other settings: {'; '.join(shown)}"
        + (f"; and {more} more" if more else "")
        + "; rerun with those settings or write this evaluation to another --out folder"
    )
