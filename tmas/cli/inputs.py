"""Turning command-line input into a problem, a config, a backend and a topology."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tmas.config import ConfigError
from tmas.graphs import inputs
from tmas.graphs.inputs import check_problem
from tmas.graphs.run_plan import RunPlan, plan_run, revised_backend
from tmas.graphs.spec import GraphSpec
from tmas.llm.backend import BackendSpec
from tmas.llm.vllm.options import normalize_key


def _stdin_text() -> str:
    """Standard input decoded as UTF-8 (strictly: a file in another encoding is refused)."""
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"the problem on standard input is not UTF-8 text: {exc}") from None


def read_problem(problem: str) -> str:
    """The problem text (``-`` reads stdin); empty, oversized or non-UTF-8 problems are refused
    (:func:`tmas.graphs.inputs.check_problem`).

    Example:
        >>> read_problem("  What is 9 + 9?  ")
        'What is 9 + 9?'
    """
    return check_problem(_stdin_text() if problem == "-" else problem)


def read_documents(paths: list[Path]) -> list[str]:
    """The texts of ``--doc`` files (UTF-8); unreadable files are refused with their name."""
    documents = []
    for path in paths:
        try:
            documents.append(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read document {path}: {exc}") from None
    return documents


def parse_pairs(items: Sequence[str], what: str = "KEY=VALUE") -> list[tuple[str, str]]:
    """``KEY=VALUE`` strings as pairs.

    Example:
        >>> parse_pairs(["epsilon=0.5", "roles={}"])
        [('epsilon', '0.5'), ('roles', '{}')]
    """
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"expected {what}, got {item!r}")
        pairs.append((key.strip(), value.strip()))
    return pairs


def parse_value(text: str) -> Any:
    """A ``--set`` value: JSON when it parses (numbers, booleans, objects), else the string.

    Example:
        >>> parse_value("0.5"), parse_value('{"verifier": {"max_tokens": 64}}'), parse_value("all")
        (0.5, {'verifier': {'max_tokens': 64}}, 'all')
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def role_settings(
    role_models: Sequence[str], role_base_urls: Sequence[str]
) -> dict[str, dict[str, str]]:
    """Per-role model settings from ``ROLE=MODEL`` and ``ROLE=URL`` options.

    Example:
        >>> role_settings(["verifier=judge"], ["verifier=http://h/v1"])
        {'verifier': {'model': 'judge', 'base_url': 'http://h/v1'}}
    """
    roles: dict[str, dict[str, str]] = {}
    for role, model in parse_pairs(role_models, "ROLE=MODEL"):
        roles.setdefault(role, {})["model"] = model
    for role, url in parse_pairs(role_base_urls, "ROLE=URL"):
        roles.setdefault(role, {})["base_url"] = url
    return roles


def load_topology(graph: str, plugins: list[str], prompt_files: Sequence[Path] = ()) -> GraphSpec:
    """Import the plugins, then load the topology (bundled name or file), apply the prompt
    files' overrides in turn and validate it (:func:`tmas.graphs.inputs.load_topology`)."""
    return inputs.load_topology(graph, plugins=plugins, prompts=list(prompt_files))


def settings_layers(
    given: dict[str, Any], settings: Sequence[str], roles: dict[str, dict[str, str]]
) -> list[dict[str, Any]]:
    """The settings a command line gives, as layers in rising priority: ``--role-model`` and
    ``--role-base-url``, then its options with ``--set`` (one layer: ``--set`` wins, and ``-t``
    against ``round_widths`` is a conflict); the run's plan merges them over the topology's
    ``config:`` block (:func:`tmas.graphs.settings.merged_config`, per-role settings field by
    field).

    Example:
        >>> settings_layers({"n_candidates": 2, "seed": None}, ["epsilon=0.5"],
        ...                 role_settings(["verifier=judge"], []))
        [{'roles': {'verifier': {'model': 'judge'}}}, {'n_candidates': 2, 'epsilon': 0.5}]
    """
    chosen = {key: value for key, value in given.items() if value is not None}
    chosen.update((key, parse_value(value)) for key, value in parse_pairs(settings))
    return [*([{"roles": roles}] if roles else []), chosen]


def engine_args(
    items: Sequence[str],
    gpu_memory_utilization: float | None = None,
    tensor_parallel_size: int | None = None,
    pipeline_parallel_size: int | None = None,
    dtype: str | None = None,
) -> dict[str, Any]:
    """vLLM engine options from ``--engine-arg KEY=VALUE`` and the named options (which win).

    Example:
        >>> engine_args(["enforce-eager=true"], gpu_memory_utilization=0.5)
        {'enforce_eager': True, 'gpu_memory_utilization': 0.5}
    """
    pairs = parse_pairs(items, "--engine-arg KEY=VALUE")
    options = {normalize_key(key): parse_value(value) for key, value in pairs}
    named = {
        "gpu_memory_utilization": gpu_memory_utilization,
        "tensor_parallel_size": tensor_parallel_size,
        "pipeline_parallel_size": pipeline_parallel_size,
        "dtype": dtype,
    }
    options.update({key: value for key, value in named.items() if value is not None})
    return options


def build_backend(**values: Any) -> BackendSpec:
    """The backend settings, with the default local model resolved to a name (a base URL
    makes the backend an OpenAI-compatible one: :func:`tmas.graphs.run_plan.revised_backend`).

    Example:
        >>> build_backend(kind="llamacpp", model="m", base_url="http://h/v1").kind
        'openai'
    """
    return revised_backend(BackendSpec(), values)


def run_options(
    n: int | None,
    m: int | None,
    iterations: int | None,
    epsilon: float | None,
    seed: int | None,
    max_tokens: int | None,
    temperature: float | None,
) -> dict[str, Any]:
    """The config fields the common command-line options set (None: not given)."""
    return {
        "n_candidates": n,
        "n_verifications": m,
        "max_iterations": iterations,
        "epsilon": epsilon,
        "seed": seed,
        "solver_max_tokens": max_tokens,  # roles.solver.max_tokens
        "temperature": temperature,
    }


def setup_run(
    graph: str,
    plugins: list[str],
    layers: Sequence[dict[str, Any]],
    backend: BackendSpec,
    prompt_files: Sequence[Path] = (),
) -> RunPlan:
    """The run's plan from command-line values: the topology (its plugins imported, its prompt
    files applied), the settings ``layers`` (:func:`settings_layers`) over its ``config:``
    block, and ``backend`` (:func:`tmas.graphs.run_plan.plan_run`); raises on any bad value,
    before anything is saved.

    Example:
        >>> plan = setup_run("majority_vote", [], [{"seed": 3}, {"round_widths": [4, 2]}],
        ...                  BackendSpec(model="smollm2"))
        >>> plan.name, plan.config.seed, plan.config.max_iterations
        ('majority_vote', 3, 2)
    """
    topology = load_topology(graph, plugins, prompt_files)
    return plan_run(topology, list(layers), backend, plugins)


def proof_reference(proof: bool, gold: str | None, reference: Path | None) -> str | None:
    """What a run keeps as its gold: the answer, or for a proof problem the reference proof
    read from ``reference``; ConfigError for a mix that cannot mean anything.

    Example:
        >>> proof_reference(False, "18", None)
        '18'
        >>> proof_reference(False, None, Path("ref.txt"))
        Traceback (most recent call last):
        ...
        tmas.config.ConfigError: --reference is for proof problems: add --proof
    """
    if not proof:
        if reference is not None:
            raise ConfigError("--reference is for proof problems: add --proof")
        return gold
    if gold is not None:
        raise ConfigError(
            "a proof problem has no gold answer: give a reference proof with --reference FILE"
        )
    if reference is None:
        return None
    try:
        text = reference.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the reference proof {reference}: {exc}") from None
    if not text:
        raise ConfigError(f"the reference proof {reference} is empty")
    return text
