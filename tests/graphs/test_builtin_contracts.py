"""Built-in node types declare their contract the way plugins do (role, templates with their
fields, reads, writes), and the declarations are true: running every bundled topology, with
failed calls among them, no node writes a key its type does not declare, and no node fed the
state reads one; every template a bundled topology's nodes render is checked before it runs,
the agent chains' ``mas/*`` and DeLM's ``delm/judge_*`` included."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

import tmas
from tmas.graphs import node_guard
from tmas.graphs.bundled import bundled_names, load_bundled
from tmas.graphs.contract_checks import contract_problems
from tmas.graphs.pipeline import bodies
from tmas.graphs.run_plan import plan_run
from tmas.graphs.traits import after_solvers, spec_needs_internals
from tmas.llm.backend import BackendSpec
from tmas.registration import registry
from tmas.testing.fake_chat import ScriptedChatModel

PROBLEM = "What is 9 + 9?"
FAILURE_RECORD = {"plan", "iteration", "candidate_index", "copy"}
"""What recording a failed call reads of its node's input (:mod:`tmas.graphs.call_failures`)."""
RUNNABLE = [n for n in bundled_names() if not spec_needs_internals(load_bundled(n))]


class RecordingState(dict):
    """A node's input that remembers which keys were read."""

    def __init__(self, values: dict[str, Any], seen: set[str]) -> None:
        super().__init__(values)
        self.seen = seen

    def __getitem__(self, key: str) -> Any:
        self.seen.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.seen.add(key)
        return super().get(key, default)


@pytest.fixture
def observed(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, dict[str, set[str]]]]:
    """What each node id read and wrote while the test ran (node id -> reads, writes)."""
    seen: dict[str, dict[str, set[str]]] = defaultdict(lambda: {"reads": set(), "writes": set()})
    original = node_guard.GuardedNode.__call__

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        record = seen[self.node_id]
        if args and isinstance(args[0], dict):
            args = (RecordingState(args[0], record["reads"]), *args[1:])
        update = original(self, *args, **kwargs)
        if isinstance(update, dict):
            record["writes"].update(update)
        return update

    monkeypatch.setattr(node_guard.GuardedNode, "__call__", recording)
    yield seen


def every_node(spec: Any) -> Iterator[tuple[Any, Any]]:
    """Each node of ``spec`` and of its pipeline bodies, with the spec it is in."""
    for node in spec.nodes:
        yield node, spec
    for body in bodies(spec).values():
        yield from every_node(body)


@pytest.mark.parametrize("name", RUNNABLE)
def test_bundled_nodes_read_and_write_only_what_their_types_declare(name: str, observed) -> None:
    model = ScriptedChatModel(fail_when=lambda role, n: n % 5 == 3)  # some calls fail for good
    config = {"n_candidates": 3, "n_verifications": 2, "max_iterations": 3, "epsilon": 0.5,
              "max_retries": 0}  # fmt: skip
    plan = plan_run(load_bundled(name), config, BackendSpec(kind="custom", model="scripted"))
    graph = tmas.build_graph(plan.topology, llm=model, config=config)
    graph.invoke(
        {"problem": PROBLEM, "documents": ["a note"]}, {"configurable": {"thread_id": "t"}}
    )
    channels = set(plan.channels)
    checked = 0
    for node, spec in every_node(plan.topology):
        if node.id not in observed:
            continue
        declared = registry().nodes[node.type]
        wrote = observed[node.id]["writes"] - channels
        assert wrote <= set(declared.writes), f"{node.id} ({node.type}) writes undeclared keys"
        fed_state = not any(node.id in e.targets and e.fanout for e in spec.edges)
        if fed_state:
            engine = set(FAILURE_RECORD) if declared.calls_llm else set()
            if node.id in after_solvers(spec):  # the all-solvers-failed check
                engine |= {"candidates", "iteration"}
            read = observed[node.id]["reads"] - channels - engine
            assert read <= set(declared.reads), f"{node.id} ({node.type}) reads undeclared keys"
        checked += 1
    assert checked >= 3


def test_every_built_in_node_type_declares_a_contract() -> None:
    for entry in registry().nodes.entries():
        name, node_type = entry.name, entry.item
        if entry.owner.startswith("tmas.graphs.builtin"):
            assert node_type.writes or name == "join", name
            if node_type.calls_llm:
                assert node_type.role and node_type.prompts, name


@pytest.mark.parametrize("name", bundled_names())
def test_every_template_a_bundled_topology_renders_is_checked(name: str) -> None:
    plan = plan_run(load_bundled(name), None, BackendSpec(kind="custom", model="scripted"))
    report = contract_problems(plan.topology, plan.prompts, plan.channels)
    assert report.problems == []
    if name in ("text_mas", "latent_mas"):
        assert {"mas/system", "mas/planner", "mas/judger"} <= report.rendered
    if name == "delm":
        assert {"delm/judge_system", "delm/judge_user", "delm/worker_user"} <= report.rendered


def test_a_chain_or_judge_template_using_a_field_it_is_not_given_is_refused() -> None:
    for name, key in (("text_mas", "mas/critic"), ("delm", "delm/judge_user")):
        spec = load_bundled(name).with_prompts({key: "{problem} {verdict_of_the_crowd}"})
        with pytest.raises(ValueError, match=rf"prompts\.{key} uses \{{verdict_of_the_crowd\}}"):
            plan_run(spec, None, BackendSpec(kind="custom", model="scripted"))
