"""Reading a study file: the YAML document, its ``toy:`` and ``--set`` overrides and the
``--only`` subset of conditions, into a :class:`~tmas.eval.study_file.StudyFile`.

Example:
    >>> parse_study({"name": "s", "reference": "a", "conditions": {"a": {}}},
    ...             overrides={"seeds": [0, 1]}).seeds
    [0, 1]
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from tmas.eval.study_file import SELF_CONSISTENCY, StudyError, StudyFile


def with_overrides(document: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``document`` with dotted keys set (``problems.limit``, ``conditions.tmas.settings.x``).

    Example:
        >>> with_overrides({"a": {"b": 1}}, {"a.c": 2, "d": 3})
        {'a': {'b': 1, 'c': 2}, 'd': 3}
    """
    if not isinstance(overrides, dict) or not all(isinstance(k, str) for k in overrides):
        raise StudyError("overrides (toy:, --set) are a mapping of dotted keys to values")
    result = copy.deepcopy(document)
    for dotted, value in overrides.items():
        keys, place = dotted.split("."), result
        for key in keys[:-1]:
            if not isinstance(place.get(key, {}), dict):
                raise StudyError(f"{dotted}: {key} is not a section of the study")
            place = place.setdefault(key, {})
        place[keys[-1]] = value
    return result


def parse_study(
    document: dict[str, Any], base_dir: Path = Path(), overrides: dict[str, Any] | None = None
) -> StudyFile:
    """A study from its parsed document, with dotted ``overrides`` applied; StudyError naming
    every problem."""
    if not isinstance(document, dict):
        raise StudyError("a study file is a mapping (name, reference, conditions, ...)")
    try:
        return StudyFile(**with_overrides(document, overrides or {}), base_dir=base_dir)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'study'}: {e['msg']}" for e in exc.errors()
        )
        raise StudyError(f"not a study: {problems}") from None


def only_conditions(document: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """``document`` keeping the conditions ``names`` and the contrasts between them (a subset
    of a study run in its own folder; the full file, rerun there, keeps their runs).

    Example:
        >>> kept = only_conditions({"reference": "a", "conditions": {"a": {}, "b": {}, "c": {}},
        ...                         "contrasts": [["b", "c"], ["a", "b"]]}, ["a", "b"])
        >>> list(kept["conditions"]), kept["contrasts"]
        (['a', 'b'], [['a', 'b']])
    """
    conditions = document.get("conditions")
    if not isinstance(conditions, dict):
        raise StudyError("the study has no conditions: section to choose from")
    known = ", ".join(map(str, conditions))
    unknown = [name for name in names if name not in conditions]
    if unknown or not names:
        raise StudyError(f"--only {', '.join(unknown)}: name conditions of the study ({known})")
    if document.get("reference") not in names:
        raise StudyError(
            f"--only leaves out the reference {document.get('reference')!r}, which every other "
            "condition is compared with: name it too, or choose another with --set reference=NAME"
        )
    for name in names:
        start = ((conditions[name] or {}).get("train") or {}).get("warm_start")
        if start is not None and start not in names:
            raise StudyError(f"--only: {name} trains from {start}'s adapter: name {start} too")
    kept = {*names, SELF_CONSISTENCY}
    result = copy.deepcopy(document)
    result["conditions"] = {name: conditions[name] for name in conditions if name in names}
    result["contrasts"] = [
        pair for pair in document.get("contrasts") or [] if set(map(str, pair)) <= kept
    ]
    return result


def load_study(
    path: Path,
    overrides: dict[str, Any] | None = None,
    *,
    toy: bool = False,
    only: list[str] | None = None,
) -> StudyFile:
    """Read a study file; with ``toy`` its ``toy:`` overrides apply first, then ``overrides``,
    then ``only`` keeps those conditions (:func:`only_conditions`).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = Path(folder) / "s.yaml"
        ...     _ = path.write_text("name: s\\nreference: a\\nconditions: {a: {}}\\n"
        ...                         "toy: {problems.limit: 2}\\n")
        ...     load_study(path, toy=True).problems.limit
        2
    """
    try:
        document = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise StudyError(f"cannot read study file {path}: {exc}") from None
    if toy:
        if not isinstance(document, dict) or not document.get("toy"):
            raise StudyError(f"{path} has no toy: section for --toy")
        document = with_overrides(document, document["toy"])
    if isinstance(document, dict):
        document = with_overrides(document, overrides or {})
        if only is not None:
            document = only_conditions(document, only)
    return parse_study(document, Path(path).resolve().parent)
