"""The declarative topology format: nodes by registered type, edges, fan-outs and loops.

A spec is a YAML or JSON file, a dict of the same shape, or a ``GraphSpec``::

    name: majority_vote
    config: {max_iterations: 1}          # defaults of this topology (the CLI may override)
    nodes:
      - {id: start, type: start_iteration, params: {planner: initial}}
      - {id: solve, type: solve, role: solver, retry: {max_attempts: 3}}
      - {id: vote, type: record_iteration}
    edges:
      - {from: START, to: start}
      - {from: start, to: solve, fanout: {tasks: solver_tasks}}
      - {from: solve, to: vote}
      - {from: vote, to: start, until: run_finished}   # loop; exits to END when finished

A spec may declare its own agent roles (``roles:``, see :mod:`tmas.roles`), state channels
(``channels:``, see :mod:`tmas.nodes.channels`) and override or add prompt templates
(``prompts:``, key ``group/name`` to the text or to ``{file: PATH}`` relative to the spec
file, see :mod:`tmas.nodes.prompts`).

An edge with ``fanout`` sends one task per item (a registered task builder, a state list or
K copies); an edge with ``until`` loops back to ``to`` until one of the named stop conditions
holds (one name or a list), then goes to ``exit`` (END by default).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

START = "START"
END = "END"


class SpecError(ValueError):
    """A topology spec is invalid; ``problems`` lists each problem with the names involved."""

    def __init__(self, problems: list[str], source: str = "spec") -> None:
        self.problems = problems
        super().__init__(f"invalid topology {source}:\n" + "\n".join(f"  - {p}" for p in problems))


class RetrySpec(BaseModel):
    """Retry settings of one node (transient errors only)."""

    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(default=3, ge=1, le=20)
    initial_interval: float = Field(default=0.5, gt=0)


class FanOut(BaseModel):
    """Exactly one of: a registered task builder, a state list to map over, or K copies;
    ``with`` adds state channels to every task (field name -> channel; a ``keyed`` channel
    gives each task its candidate's entry).

    Example:
        >>> FanOut.model_validate({"tasks": "verification_tasks",
        ...                        "with": {"critique": "critiques"}}).with_
        {'critique': 'critiques'}
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tasks: str | None = None
    over: str | None = None
    copies: int | None = Field(default=None, ge=1, le=1024)
    with_: dict[str, str] = Field(default_factory=dict, alias="with")

    @model_validator(mode="after")
    def _exactly_one(self) -> FanOut:
        chosen = [k for k in ("tasks", "over", "copies") if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError("a fanout needs exactly one of tasks, over, copies")
        return self


class NodeSpec(BaseModel):
    """One node: a registered type, its parameters, and optionally a model role and retries."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_\-]*$")
    type: str
    params: dict[str, Any] = Field(default_factory=dict)
    role: str | None = None
    retry: RetrySpec | None = None


class RoleDecl(BaseModel):
    """A role a spec declares: its answer budget, the role whose model it borrows, what it
    does (see :func:`tmas.roles.register_role`)."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: int = Field(ge=1, le=262_144)
    model_of: str | None = Field(
        default=None, description="the role whose model this one borrows (None: the main model)"
    )
    description: str = ""

    @model_validator(mode="before")
    @classmethod
    def _older_spelling(cls, data: Any) -> Any:
        """Accept ``model:``, the older spelling of ``model_of:``."""
        if isinstance(data, dict) and "model" in data:
            data = dict(data)
            found = data.pop("model")
            if data.get("model_of") not in (None, found):
                raise ValueError("give model_of (model is its older spelling), not both")
            data["model_of"] = found
        return data


class ChannelDecl(BaseModel):
    """A state channel a spec declares (see :mod:`tmas.nodes.channels`): its reducer, whether
    it empties when an iteration opens, and (append) how many items it keeps."""

    model_config = ConfigDict(extra="forbid")

    reducer: Literal["append", "keyed", "replace"] = "replace"
    per_iteration: bool = False
    cap: int = Field(default=256, ge=1, le=100_000)
    description: str = ""


class EdgeSpec(BaseModel):
    """An arc (or several) from one node; plain, fan-out, or loop."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    source: str = Field(alias="from")
    target: str | list[str] = Field(alias="to")
    fanout: FanOut | None = None
    until: str | list[str] | None = None
    exit: str = END

    @property
    def targets(self) -> list[str]:
        """The targets as a list."""
        return [self.target] if isinstance(self.target, str) else list(self.target)

    @property
    def conditions(self) -> list[str]:
        """The stop conditions of a loop edge as a list (empty for other edges).

        Example:
            >>> EdgeSpec.model_validate({"from": "a", "to": "b",
            ...                          "until": ["run_finished", "consensus"]}).conditions
            ['run_finished', 'consensus']
        """
        if self.until is None:
            return []
        return [self.until] if isinstance(self.until, str) else list(self.until)

    @model_validator(mode="after")
    def _loop_is_plain(self) -> EdgeSpec:
        if self.until is not None and (self.fanout is not None or len(self.targets) != 1):
            raise ValueError("a loop edge (until) has one target and no fanout")
        if isinstance(self.until, list) and not self.until:
            raise ValueError("a loop edge needs at least one stop condition in until")
        return self


class GraphSpec(BaseModel):
    """A whole topology.

    Example:
        >>> spec = GraphSpec.model_validate({"name": "x", "nodes": [{"id": "a", "type": "join"}],
        ...     "edges": [{"from": "START", "to": "a"}, {"from": "a", "to": "END"}]})
        >>> spec.node_ids()
        ['a']
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    roles: dict[str, RoleDecl] = Field(default_factory=dict)
    channels: dict[str, ChannelDecl] = Field(default_factory=dict)
    prompts: dict[str, str] = Field(default_factory=dict)
    nodes: list[NodeSpec]
    edges: list[EdgeSpec]

    def node_ids(self) -> list[str]:
        """Ids of the nodes, in declaration order."""
        return [node.id for node in self.nodes]

    def with_prompts(self, overrides: dict[str, str]) -> GraphSpec:
        """This spec with more prompt overrides (they win over its own).

        Example:
            >>> spec = GraphSpec(name="x", nodes=[], edges=[])
            >>> spec.with_prompts({"solver/system": "Be brief."}).prompts
            {'solver/system': 'Be brief.'}
        """
        return self.model_copy(update={"prompts": {**self.prompts, **overrides}})

    def renamed(self, name: str, description: str | None = None) -> GraphSpec:
        """This spec under another name (and description).

        Example:
            >>> GraphSpec(name="x", nodes=[], edges=[]).renamed("y").name
            'y'
        """
        update: dict[str, Any] = {"name": name}
        if description is not None:
            update["description"] = description
        return self.model_copy(update=update)

    def with_config(self, **values: Any) -> GraphSpec:
        """This spec with more defaults in its ``config:`` block.

        Example:
            >>> GraphSpec(name="x", nodes=[], edges=[]).with_config(n_candidates=8).config
            {'n_candidates': 8}
        """
        return self.model_copy(update={"config": {**self.config, **values}})

    def with_params(self, node_id: str, **params: Any) -> GraphSpec:
        """This spec with node ``node_id``'s parameters updated; KeyError for an unknown id.

        Example:
            >>> spec = GraphSpec.model_validate({"name": "x", "nodes": [{"id": "a",
            ...     "type": "start_iteration"}], "edges": []})
            >>> spec.with_params("a", planner="refine").nodes[0].params
            {'planner': 'refine'}
        """
        if node_id not in self.node_ids():
            raise KeyError(f"no node {node_id!r}; nodes: {', '.join(self.node_ids())}")
        nodes = [
            n.model_copy(update={"params": {**n.params, **params}}) if n.id == node_id else n
            for n in self.nodes
        ]
        return self.model_copy(update={"nodes": nodes})

    def without_nodes(self, *node_ids: str) -> GraphSpec:
        """This spec without the given nodes (an ablation), inside pipeline bodies too
        (:func:`tmas.graphs.spec_edits.without_nodes`). Validate the result
        (``tmas.load_topology``).

        Example:
            >>> from tmas.graphs.bundled import load_bundled
            >>> ablation = load_bundled("tmas_barrier").without_nodes("extract_guideline")
            >>> [e.target for e in ablation.edges if e.source == "summaries_ready"]
            [['extract_experience']]
        """
        from tmas.graphs.spec_edits import without_nodes

        return without_nodes(self, *node_ids)

    def with_node(
        self,
        node: NodeSpec | dict[str, Any],
        *,
        after: str | None = None,
        before: str | None = None,
    ) -> GraphSpec:
        """This spec with ``node`` inserted right after or right before a named node, inside a
        pipeline body too (:func:`tmas.graphs.spec_edits.with_node`). Validate the result
        (``tmas.load_topology``).

        Example:
            >>> from tmas.graphs.bundled import load_bundled
            >>> spec = load_bundled("majority_vote").with_node(
            ...     {"id": "pause", "type": "join"}, after="record_iteration")
            >>> [(e.source, e.target) for e in spec.edges][-2:]
            [('pause', 'start_iteration'), ('record_iteration', 'pause')]
        """
        from tmas.graphs.spec_edits import with_node

        return with_node(self, node, after=after, before=before)


def _field_problems(exc: ValidationError) -> list[str]:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "spec"
        problems.append(f"{where}: {err['msg']}")
    return problems


def parse_spec(data: Any, source: str = "spec") -> GraphSpec:
    """Validate the fields of a spec given as a dict (or a GraphSpec).

    Example:
        >>> parse_spec({"name": "x", "nodes": [], "edges": [{"from": "START"}]})
        Traceback (most recent call last):
        ...
        tmas.graphs.spec.SpecError: invalid topology spec:
          - edges.0.to: Field required
    """
    if isinstance(data, GraphSpec):
        return data
    if not isinstance(data, dict):
        raise SpecError([f"expected a mapping at the top level, got {type(data).__name__}"], source)
    try:
        return GraphSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_field_problems(exc), source) from None


def read_data_file(path: Path | str) -> Any:
    """The contents of a YAML (.yaml/.yml) or JSON (.json) file; SpecError when it cannot be
    read or parsed."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([f"cannot read {path}: {exc}"], str(path)) from None
    try:
        if path.suffix.lower() == ".json":
            return json.loads(text)
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when built with it
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader either way
    except Exception as exc:  # noqa: BLE001 - any syntax error becomes one clear problem
        raise SpecError([f"cannot parse {path.name}: {exc}"], str(path)) from None


def resolve_prompts(entries: Any, base_dir: Path, source: str) -> dict[str, str]:
    """Prompt entries (key to text, or to ``{file: PATH}`` relative to ``base_dir``) as key to
    text; SpecError naming each entry that is neither or whose file cannot be read.

    Example:
        >>> resolve_prompts({"solver/system": "Be brief."}, Path("."), "spec")
        {'solver/system': 'Be brief.'}
    """
    if entries is None:
        return {}
    if not isinstance(entries, dict):
        raise SpecError([f"prompts: expected a mapping, got {type(entries).__name__}"], source)
    found, problems = {}, []
    for key, value in entries.items():
        if isinstance(value, dict) and set(value) == {"file"}:
            path = base_dir / str(value["file"])
            try:
                found[str(key)] = path.read_text(encoding="utf-8").removesuffix("\n")
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(f"prompts.{key}: cannot read {path}: {exc}")
        elif isinstance(value, str):
            found[str(key)] = value
        else:
            problems.append(f"prompts.{key}: expected the template text or {{file: PATH}}")
    if problems:
        raise SpecError(problems, source)
    return found


def load_prompt_file(path: Path | str) -> dict[str, str]:
    """The prompt overrides of a YAML or JSON file (what ``--prompts FILE`` reads): a mapping of
    ``group/name`` to the template text or to ``{file: PATH}`` relative to the file."""
    path = Path(path)
    return resolve_prompts(read_data_file(path), path.parent, str(path))


def load_spec_file(path: Path | str) -> GraphSpec:
    """Read a YAML (.yaml/.yml) or JSON (.json) spec file and validate its fields; prompt
    files it names are read into the spec (so a saved run keeps their text)."""
    path = Path(path)
    data = read_data_file(path)
    if isinstance(data, dict) and "prompts" in data:
        data = {**data, "prompts": resolve_prompts(data["prompts"], path.parent, str(path))}
    return parse_spec(data, str(path))
