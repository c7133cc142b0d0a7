"""What determines an evaluation's results, saved beside them so a rerun with other settings is
refused instead of mixing (or mislabelling) results.

The identity covers the topology spec (every node, parameter and edge), the config (sizes,
selection rule, budgets, per-role model overrides), the backend and the model of every role,
the plugins (module and a digest of its source) and the prompt templates. A LoRA adapter counts
by its content, not its path: the same adapter moved or copied (a study folder taken to another
machine) is the same, and one retrained in place is not. ``about`` records the package version
and is not compared.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import Any

from tmas.config import EXECUTION_SETTINGS, TMASConfig
from tmas.graphs.run_plan import RunPlan
from tmas.graphs.settings import canonical_settings
from tmas.graphs.spec import GraphSpec, parse_spec
from tmas.llm.backend import BackendSpec
from tmas.llm.content_keys import content_key
from tmas.roles import BUILTIN_ROLES

IDENTITY = "identity.json"
MAX_CHANGES_SHOWN = 6


class EvaluationMismatch(ValueError):
    """An evaluation folder holds results made with other settings."""


def _digest(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()[:16]


NOT_RESULT_SETTINGS = EXECUTION_SETTINGS
"""Config fields that change how a run copes with faults or how much state it keeps, not what
its model calls answer: left out of identities."""
CORRECTABLE = ("backend.", "models.", "config.roles.")
"""Identity keys a rerun may change after an evaluation stopped on a fatal model error before
any problem finished: the model settings the stop asked to fix."""


def _model_line(line: str) -> str:
    """A role's model line (``hf:smollm2 + /adapter``) with its adapter as its content key
    (:func:`tmas.llm.content_keys.content_key`)."""
    model, plus, adapter = line.rpartition(" + ")
    return f"{model}{plus}{content_key(adapter)}" if plus else line


def _config(config: TMASConfig | dict[str, Any]) -> dict[str, Any]:
    if isinstance(config, dict):
        try:  # fields added since it was saved take their defaults
            config = TMASConfig(**config)
        except ValueError:
            return {k: v for k, v in config.items() if k not in NOT_RESULT_SETTINGS}
    found = canonical_settings(config)  # budgets compare alike however they were spelt
    for role in (found.get("roles") or {}).values():
        if isinstance(role, dict) and role.get("adapter"):
            role["adapter"] = content_key(str(role["adapter"]))
    return {k: v for k, v in found.items() if k not in NOT_RESULT_SETTINGS}


def _backend(backend: BackendSpec | dict[str, Any]) -> dict[str, Any]:
    if isinstance(backend, dict):
        try:
            backend = BackendSpec(**backend)
        except ValueError:
            return dict(backend)
    found = backend.identity()
    if found.get("adapter"):
        found["adapter"] = content_key(str(found["adapter"]))
    return found


def _spec(spec: GraphSpec | dict[str, Any] | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    parsed = parse_spec(spec)
    dumped = parsed.model_dump(by_alias=True, mode="json", exclude={"description"})
    for edge, parsed_edge in zip(dumped["edges"], parsed.edges, strict=True):
        edge["to"] = parsed_edge.targets  # "to: b" and "to: [b]" are the same wiring
    return dumped


def run_identity(
    graph: str,
    config: TMASConfig | dict[str, Any],
    backend: BackendSpec | dict[str, Any],
    spec: GraphSpec | dict[str, Any] | None,
    plugins: list[Any],
) -> dict[str, Any]:
    """What a run's results depend on, comparable across versions: the config (later fields
    at their defaults, fault-handling settings left out), the backend's result-deciding
    settings, the spec's wiring (its description left out) and the plugins.

    Example:
        >>> a = run_identity("t", {"epsilon": 0.2, "max_retries": 5}, {"kind": "llamacpp",
        ...                  "model": "qwen", "timeout_s": 9}, None, [])
        >>> b = run_identity("t", TMASConfig(), BackendSpec(model="qwen"), None, [])
        >>> a == b
        True
    """
    return {
        "graph": graph,
        "spec": _spec(spec),
        "config": _config(config),
        "backend": _backend(backend),
        "plugins": list(plugins),
    }


def evaluation_identity(plan: RunPlan) -> dict[str, Any]:
    """Everything that determines an evaluation's results, as plain JSON-able data: read from
    its run plan (the topology's wiring, the config, the backend, the model of every role, the
    plugins with their digests and the digest of every template).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> from tmas.graphs.run_plan import plan_run
        >>> plan = plan_run(load_bundled("pacore"), None, BackendSpec(model="smollm2"))
        >>> identity = evaluation_identity(plan)
        >>> identity["graph"], identity["backend"]["model"], identity["models"]["verifier"]
        ('pacore', 'smollm2', 'llamacpp:smollm2')
    """
    try:
        version = metadata.version("tmas")
    except metadata.PackageNotFoundError:
        version = "unknown"
    plugin_list = [plugin.model_dump() for plugin in plan.plugins]
    compared = [*BUILTIN_ROLES, *plan.config.roles]  # the roles whose models can be chosen
    return {
        **run_identity(plan.name, plan.config, plan.backend, plan.topology, plugin_list),
        "models": {role: _model_line(plan.models[role]) for role in dict.fromkeys(compared)},
        "prompts": plan.prompt_set().digests(),
        "about": {"tmas_version": version},
    }


def comparable(identity: dict[str, Any]) -> dict[str, Any]:
    """A saved or current identity as compared: config, backend and spec normalised as in
    :func:`run_identity`; ``about`` and the stop marker left out."""
    found = {k: v for k, v in identity.items() if k not in ("about", "stopped")}
    if "config" in found:
        found["config"] = _config(found["config"])
    if "backend" in found:
        found["backend"] = _backend(found["backend"])
    if found.get("spec") is not None:
        found["spec"] = _spec(found["spec"])
    if isinstance(found.get("models"), dict):
        found["models"] = {role: _model_line(str(line)) for role, line in found["models"].items()}
    return found


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
    """What differs between two identities (:func:`comparable`), one ``key: old -> new`` line
    each.

    Example:
        >>> identity_changes({"backend": {"model": "qwen"}, "about": {"v": 1}},
        ...                  {"backend": {"model": "smollm2"}, "about": {"v": 2}})
        ["backend.model: 'qwen' -> 'smollm2'"]

    A template only one side knows (one a later version added) changes nothing the runs
    read; a template whose text changed does:

        >>> identity_changes({"prompts": {"solver/system": "a1"}},
        ...                  {"prompts": {"solver/system": "a2", "mas/critic": "c1"}})
        ["prompts.solver/system: 'a1' -> 'a2'"]
    """
    old = _flatten(comparable(saved))
    new = _flatten(comparable(current))
    missing = object()
    return [
        f"{key}: {old.get(key, missing)!r} -> {new.get(key, missing)!r}".replace(
            repr(missing), "(none)"
        )
        for key in sorted(set(old) | set(new))
        if old.get(key, missing) != new.get(key, missing)
        and not (key.startswith("prompts.") and (key not in old or key not in new))
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


def check_identity(out_dir: Path, identity: dict[str, Any], *, answered: bool = False) -> bool:
    """Refuse to go on in ``out_dir`` when it holds results of other settings, naming what
    changed. After an evaluation stopped on a fatal model error with no problem ``answered``
    yet, changed model settings (:data:`CORRECTABLE`) are the fix it asked for: accepted, and
    True is returned (the saved runs must then take them).

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
        return False
    changes = identity_changes(saved, identity)
    if not changes:
        return False
    correcting = saved.get("stopped") and not answered
    if correcting and all(change.startswith(CORRECTABLE) for change in changes):
        return True
    shown = changes[:MAX_CHANGES_SHOWN]
    more = len(changes) - len(shown)
    raise EvaluationMismatch(
        f"{out_dir} holds an evaluation made with other settings: {'; '.join(shown)}"
        + (f"; and {more} more" if more else "")
        + "; rerun with those settings or write this evaluation to another --out folder"
    )
