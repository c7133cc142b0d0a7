"""What a run is given, checked before anything heavy loads: its topology (with plugins and
prompt overrides) and its problem text. :mod:`tmas.api` and the command line share these."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tmas.config import ConfigError
from tmas.graphs.bundled import resolve_spec
from tmas.graphs.plugin_files import load_plugin
from tmas.graphs.spec import GraphSpec, load_prompt_file, parse_spec
from tmas.graphs.validate import validate_spec

Topology = GraphSpec | str | Path | Mapping[str, Any]
Prompts = Mapping[str, str] | Sequence[str | Path] | None
MAX_PROBLEM_CHARS = 100_000


def load_topology(
    topology: Topology = "tmas", *, plugins: Sequence[str] = (), prompts: Prompts = None
) -> GraphSpec:
    """A validated topology: a bundled name, a spec file (YAML/JSON), a dict of the same
    shape, or a ``GraphSpec``. ``plugins`` (module names or ``.py`` paths) are imported
    first; ``prompts`` overrides prompt templates (a mapping ``group/name`` -> text, or prompt
    files as ``--prompts`` reads them). SpecError lists every problem.

    Example:
        >>> spec = load_topology("tmas", prompts={"solver/system": "Be brief."})
        >>> spec.name, spec.prompts
        ('tmas', {'solver/system': 'Be brief.'})
    """
    for ref in plugins:
        load_plugin(ref)
    if isinstance(topology, GraphSpec):
        spec, source = topology, topology.name
    elif isinstance(topology, Mapping):
        spec = parse_spec(dict(topology))
        source = spec.name
    else:
        spec, source = resolve_spec(str(topology)), str(topology)
    if isinstance(prompts, Mapping):
        spec = spec.with_prompts(dict(prompts))
    else:
        for path in prompts or ():
            spec = spec.with_prompts(load_prompt_file(path))
    return validate_spec(spec, source)


def check_problem(text: str) -> str:
    """The problem text, stripped; ConfigError for an empty, oversized or non-UTF-8 one.

    Example:
        >>> check_problem("  What is 9 + 9?\\n")
        'What is 9 + 9?'
        >>> check_problem("x" * (MAX_PROBLEM_CHARS + 1))
        Traceback (most recent call last):
        ...
        tmas.config.ConfigError: the problem is 100,001 characters; the limit is 100,000
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes of a command-line argument
        raise ConfigError("the problem is not UTF-8 text") from None
    if not text.strip():
        raise ConfigError("the problem is empty")
    if len(text) > MAX_PROBLEM_CHARS:
        raise ConfigError(
            f"the problem is {len(text):,} characters; the limit is {MAX_PROBLEM_CHARS:,}"
        )
    return text.strip()
