"""Structural checks of a topology spec (networkx, loaded when a spec is checked), run before
anything is compiled or run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tmas.graphs.contract_checks import contract_problems
from tmas.graphs.pipeline import body_of, is_pipeline
from tmas.graphs.spec import END, START, GraphSpec, SpecError
from tmas.nodes.channels import channel_spec
from tmas.nodes.prompts import builtin_templates, override_problems
from tmas.registration import registry
from tmas.roles import BUILTIN_ROLES, RoleBook

if TYPE_CHECKING:
    import networkx as nx


def spec_digraph(spec: GraphSpec, *, with_loop_backs: bool = True) -> nx.DiGraph:
    """The spec's arcs as a directed graph with START and END nodes.

    Loop edges contribute their exit arc always and their back arc when ``with_loop_backs``.

    Example:
        >>> from tmas.graphs.spec import parse_spec
        >>> spec = parse_spec({"name": "x", "nodes": [{"id": "a", "type": "join"}],
        ...     "edges": [{"from": "START", "to": "a"}, {"from": "a", "to": "a",
        ...                "until": "run_finished"}]})
        >>> sorted(spec_digraph(spec).edges())
        [('START', 'a'), ('a', 'END'), ('a', 'a')]
    """
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from([START, END, *spec.node_ids()])
    for edge in spec.edges:
        if edge.until is not None:
            graph.add_edge(edge.source, edge.exit)
            if with_loop_backs:
                graph.add_edge(edge.source, edge.target)
            continue
        for target in edge.targets:
            graph.add_edge(edge.source, target)
    return graph


def plain_sources(spec: GraphSpec) -> dict[str, list[str]]:
    """For each node that plain edges lead to, their sources in declaration order. A node
    with several runs once, after all of them ran (a join), however long each branch is.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> plain_sources(load_bundled("tmas_barrier"))["update_banks"]
        ['extract_experience', 'extract_guideline']
    """
    sources: dict[str, list[str]] = {}
    for edge in spec.edges:
        if edge.fanout is None and edge.until is None:
            for target in edge.targets:
                found = sources.setdefault(target, [])
                if edge.source not in found:
                    found.append(edge.source)
    return sources


def _reference_problems(spec: GraphSpec) -> list[str]:
    problems = []
    ids = spec.node_ids()
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        problems.append(f"duplicate node ids: {', '.join(duplicates)}")
    for reserved in (START, END):
        if reserved in ids:
            problems.append(f"node id {reserved} is reserved")
    for node in spec.nodes:
        if node.type not in registry().nodes:
            known = ", ".join(sorted(registry().nodes))
            problems.append(f"node {node.id}: unknown node type {node.type!r} (known: {known})")
    known_ids = set(ids)
    for edge in spec.edges:
        if edge.source not in known_ids | {START}:
            problems.append(f"edge from {edge.source!r}: no such node (dangling edge)")
        ends = edge.targets + ([edge.exit] if edge.until else [])
        for target in ends:
            if target not in known_ids | {END}:
                problems.append(f"edge {edge.source} -> {target}: no such node (dangling edge)")
        if edge.fanout and edge.fanout.tasks and edge.fanout.tasks not in registry().tasks:
            problems.append(f"edge from {edge.source}: unknown task builder {edge.fanout.tasks!r}")
        for condition in edge.conditions:
            if condition not in registry().stops:
                known = ", ".join(sorted(registry().stops))
                problems.append(
                    f"edge from {edge.source}: unknown stop condition {condition!r} "
                    f"(known: {known})"
                )
    sources = [e.source for e in spec.edges]
    for edge in spec.edges:
        if (edge.fanout or edge.until) and sources.count(edge.source) > 1:
            problems.append(
                f"node {edge.source}: a fan-out or loop edge must be the node's only outgoing edge"
            )
    if START not in sources:
        problems.append("no edge from START")
    return problems


def _structure_problems(spec: GraphSpec) -> list[str]:
    import networkx as nx

    problems = []
    graph = spec_digraph(spec)
    reachable = nx.descendants(graph, START)
    unreachable = [n for n in spec.node_ids() if n not in reachable]
    if unreachable:
        problems.append(f"nodes unreachable from START: {', '.join(unreachable)}")
    reaches_end = nx.ancestors(graph, END)
    stuck = [n for n in spec.node_ids() if n in reachable and n not in reaches_end]
    if stuck:
        problems.append(f"nodes that can never reach END: {', '.join(stuck)}")
    without_loop_backs = spec_digraph(spec, with_loop_backs=False)
    for cycle in nx.simple_cycles(without_loop_backs):
        problems.append(f"loop without an exit (no 'until' edge): {' -> '.join(cycle)}")
        if len(problems) > 10:
            break
    if not problems:
        problems = _join_problems(spec)
    return problems


def _join_problems(spec: GraphSpec) -> list[str]:
    """Joins that could wait for ever: one that includes START, or whose sources are not all in
    the same loop as the join itself (one running once could never satisfy a later pass)."""
    import networkx as nx

    component = {}
    for i, nodes in enumerate(nx.strongly_connected_components(spec_digraph(spec))):
        component.update(dict.fromkeys(nodes, i))
    problems = []
    for target, joined in plain_sources(spec).items():
        if len(joined) < 2:
            continue
        if START in joined:
            problems.append(
                f"node {target}: plain edges from START and from {', '.join(joined[1:])} "
                "would make it wait for START again (a join cannot include START)"
            )
            continue
        apart = [s for s in joined if component[s] != component[target]]
        inside = [s for s in joined if component[s] == component[target]]
        if apart and inside:
            problems.append(
                f"node {target} joins {', '.join(inside)} (in its loop) with "
                f"{', '.join(apart)} (outside it): a join waits for every source in every "
                "pass, so its sources must all be in the same loop"
            )
    return problems


def _role_and_prompt_problems(spec: GraphSpec, outer_roles: frozenset[str]) -> list[str]:
    """Roles the nodes name but nobody declares, declarations that borrow the model of an
    unknown role or redeclare a built-in one, and prompt overrides that cannot work."""
    known = set(RoleBook.registered()) | set(spec.roles) | outer_roles
    problems = []
    for name, role in spec.roles.items():
        if name in BUILTIN_ROLES:
            problems.append(f"roles.{name}: a built-in role cannot be redeclared")
        if role.model_of is not None and role.model_of not in known:
            problems.append(f"roles.{name}: borrows the model of unknown role {role.model_of!r}")
    for node in spec.nodes:
        if node.role is not None and node.role not in known:
            problems.append(
                f"node {node.id}: unknown role {node.role!r} (declare it under roles:; "
                f"known: {', '.join(sorted(known))})"
            )
    return problems


def _param_problems(spec: GraphSpec) -> list[str]:
    """Node parameters their type does not take or cannot use (checked against the node
    factory's signature and annotations), and planner modes without a solver prompt."""
    problems = []
    prompts = {**builtin_templates(), **spec.prompts}
    for node in spec.nodes:
        node_type = registry().nodes.get(node.type)
        if node_type is None:
            continue
        problems += [f"node {node.id}: {p}" for p in node_type.param_problems(node.params)]
        planner = registry().planners.get(str(node.params.get("planner", "")))
        for mode in planner.modes if planner is not None else ():
            if f"solver/{mode}" not in prompts:
                problems.append(
                    f"node {node.id}: planner {node.params['planner']!r} makes {mode!r} "
                    f"candidates but there is no solver/{mode} prompt (register it or add it "
                    "to the spec's prompts: block)"
                )
    return problems


def _body_problems(body: GraphSpec) -> list[str]:
    """What a pipeline body may not do: loop, open or end an iteration, or declare what belongs
    to the whole topology (config, roles, prompts)."""
    problems = []
    for key in ("config", "roles", "channels", "prompts"):
        if getattr(body, key):
            problems.append(f"{key}: belongs to the topology, not to a pipeline body")
    for edge in body.edges:
        if edge.until is not None:
            problems.append(
                f"edge from {edge.source} loops (until): a body runs once per task; loop in "
                "the topology around the pipeline node instead"
            )
    for node in body.nodes:
        node_type = registry().nodes.get(node.type)
        if node_type is not None and (node_type.ends_iteration or node_type.starts_iteration):
            problems.append(
                f"node {node.id} ({node.type}) opens or ends an iteration: only the topology "
                "around the pipeline may"
            )
    return problems


def _pipeline_problems(spec: GraphSpec, outer: tuple[str, ...], roles: frozenset[str]) -> list[str]:
    """Each pipeline node's body: readable, checked as a spec and as a body (nested bodies
    too, a body that contains itself refused), and entered by fan-out edges only."""
    problems = []
    for node in spec.nodes:
        if not is_pipeline(node):
            continue
        for edge in spec.edges:
            into = node.id in edge.targets or (edge.until is not None and edge.exit == node.id)
            if into and edge.fanout is None:
                problems.append(
                    f"node {node.id}: a pipeline runs once per fan-out task; the edge from "
                    f"{edge.source} would hand it the whole state (make it a fan-out)"
                )
        try:
            body = body_of(node)
        except SpecError as exc:
            problems += [f"node {node.id}: body: {p}" for p in exc.problems]
            continue
        if body.name in outer:
            problems.append(f"node {node.id}: body {body.name!r} contains itself")
            continue
        found = _body_problems(body) + _spec_problems(body, (*outer, body.name), roles)
        problems += [f"node {node.id}: body {body.name!r}: {p}" for p in found]
    return problems


def _spec_problems(
    spec: GraphSpec, outer: tuple[str, ...], outer_roles: frozenset[str] = frozenset()
) -> list[str]:
    """Every problem of ``spec``, a body of the topologies named ``outer`` (whose roles are
    ``outer_roles``) when those are given."""
    roles = outer_roles | frozenset(spec.roles)
    problems = _reference_problems(spec) + _role_and_prompt_problems(spec, outer_roles)
    problems += _param_problems(spec) + _pipeline_problems(spec, outer, roles)
    if not problems:
        problems = _structure_problems(spec)
    return problems


def validate_spec(spec: GraphSpec, source: str = "spec") -> GraphSpec:
    """Raise ``SpecError`` listing every problem; return the spec when it is valid.

    Checks: node types, task builders and stop conditions are registered; node parameters are
    ones their type takes, of the right types (planners, selection rules known); edges name existing
    nodes; every node is reachable from START and can reach END; every cycle has an exit; a
    join (a node with several plain incoming edges) neither includes START nor mixes sources
    inside and outside its loop; roles are declared; channels are declared where nodes and
    fan-outs name them, and every field a template names is given to the node that renders it
    (:mod:`tmas.graphs.contract_checks`); a pipeline node's body passes the same checks, does
    not loop, open or end an iteration, and the pipeline is entered by fan-outs only. A spec's
    ``roles:`` belong to its runs (:class:`tmas.roles.RoleBook`), never to the process.
    """
    problems = _spec_problems(spec, (spec.name,))
    if not problems:
        problems = _contract_problems(spec)
    if problems:
        raise SpecError(problems, source)
    return spec


def _contract_problems(spec: GraphSpec) -> list[str]:
    """The spec's channel declarations, then the node contract (:mod:`contract_checks`); an
    override of a template no node of the spec renders must use only the fields of the
    template it overrides."""
    problems = []
    for name, decl in spec.channels.items():
        try:
            channel_spec(name, **decl.model_dump())
        except ValueError as exc:
            problems.append(f"channels.{name}: {exc}")
    malformed = override_problems(spec.prompts, {})  # keys and templates that cannot work
    if problems or malformed:
        return problems + malformed
    templates = {**builtin_templates(), **spec.prompts}
    report = contract_problems(spec, templates, [*spec.channels, *registry().channels])
    unrendered = {k: v for k, v in spec.prompts.items() if k not in report.rendered}
    known = {k: v for k, v in builtin_templates().items() if k in unrendered}
    problems = report.problems + override_problems(unrendered, known)
    return problems + unused_plugin_templates(spec, report.rendered)


def every_node(spec: GraphSpec) -> list:
    """The nodes of ``spec`` and of its pipelines' bodies (bodies that do not read left out).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> [n.id for n in every_node(load_bundled("tmas"))][-2:]
        ['extract_experience', 'extract_guideline']
    """
    nodes = list(spec.nodes)
    for node in spec.nodes:
        if is_pipeline(node):
            try:
                nodes += every_node(body_of(node))
            except SpecError:
                continue
    return nodes


def unused_plugin_templates(spec: GraphSpec, rendered: set[str]) -> list[str]:
    """A plugin whose node types the spec uses and whose templates none of its nodes renders
    (registered under another group than the nodes' roles: they would never be used).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> unused_plugin_templates(load_bundled("tmas"), set())
        []
    """
    found = registry()
    by_owner: dict[str, set[str]] = {}
    for node in every_node(spec):
        entry = found.nodes.entry(node.type) if node.type in found.nodes else None
        if entry is not None and not entry.builtin:
            role = node.role or entry.item.role or "solver"
            by_owner.setdefault(entry.owner, set()).add(f"{role}/")
    problems = []
    for owner, roles in sorted(by_owner.items()):
        templates = found.owned_by(owner).get("prompts", [])
        if templates and not rendered & set(templates):
            problems.append(
                f"plugin {owner} registers prompts {', '.join(templates)}, which no node of "
                f"this topology renders (its nodes render templates under "
                f"{', '.join(sorted(roles))}): register them under the node's role, or "
                "give the node the role of their group (role: in the spec)"
            )
    return problems
