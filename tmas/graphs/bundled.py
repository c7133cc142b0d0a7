"""The topologies shipped with the package (spec files in ``tmas/graphs/specs``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from tmas.graphs.spec import GraphSpec, SpecError, load_spec_file

SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def bundled_dir() -> Path:
    """Folder of the bundled spec files."""
    return Path(str(resources.files("tmas.graphs") / "specs"))


def bundled_names() -> list[str]:
    """Names of the bundled topologies.

    Example:
        >>> "tmas" in bundled_names() and "majority_vote" in bundled_names()
        True
    """
    return sorted(p.stem for p in bundled_dir().iterdir() if p.suffix in SPEC_SUFFIXES)


def load_bundled(name: str) -> GraphSpec:
    """The bundled topology ``name``; SpecError listing the names when there is none."""
    for suffix in SPEC_SUFFIXES:
        path = bundled_dir() / f"{name}{suffix}"
        if path.exists():
            return load_spec_file(path)
    raise SpecError([f"no bundled topology {name!r}; known: {', '.join(bundled_names())}"], name)


def resolve_spec(name_or_path: str) -> GraphSpec:
    """A bundled topology by name, or a spec file by path.

    Example:
        >>> resolve_spec("tmas").name
        'tmas'
    """
    path = Path(name_or_path)
    if path.suffix in SPEC_SUFFIXES or path.is_file():
        if not path.exists():
            raise SpecError([f"no such spec file: {path}"], name_or_path)
        return load_spec_file(path)
    return load_bundled(name_or_path)
