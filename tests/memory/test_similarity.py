"""Similarities by name: a registered one drives bank dedup, experience relevance, the lifelong
memory and the DeLM gate; ``--set similarity=...`` or a spec's ``config:`` block selects it; an
unknown name is refused before anything is saved; the choice is part of the evaluation's
identity, and its plugin is saved with the run."""

from __future__ import annotations

import math
import random
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore
from rank_bm25 import BM25Okapi
from typer.testing import CliRunner

from tmas.api import build_graph
from tmas.cli import app
from tmas.config import TMASConfig
from tmas.eval.identity import identity_changes, run_identity
from tmas.graphs.bundled import load_bundled
from tmas.graphs.catalog import run_plugins
from tmas.graphs.plugin_files import load_plugin
from tmas.graphs.run_plan import plan_run, saved_plan
from tmas.lifecycle.history import saved_state
from tmas.lifecycle.manager import RunManager
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.memory.banks import merge_into_bank, relevant_experiences
from tmas.memory.dedup import find_duplicate, is_near_duplicate
from tmas.memory.lifelong import LifelongMemory
from tmas.memory.similarity import (
    bm25_scores,
    content_words,
    register_similarity,
    similarities_of,
    similarity_named,
)
from tmas.nodes.agents.delm_gate import VerificationGate, deterministic_problems
from tmas.plugin import register_similarity as public_register_similarity
from tmas.storage import open_storage
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.scripted import ScriptedReplies

PROBLEM = "What is 9 + 9?"
SMALL = {"n_candidates": 3, "n_verifications": 1, "max_iterations": 2, "epsilon": 0.5}


@pytest.fixture
def similarities(restored_registry: Any) -> Any:
    """The similarity table, restored after the test."""
    return restored_registry.similarities


def first_word(query: str, texts: Sequence[str]) -> list[float]:
    """1 when a text's first word is the query's, else 0."""
    head = re.findall(r"[a-z]+", query.lower())[:1]
    return [float(re.findall(r"[a-z]+", text.lower())[:1] == head) for text in texts]


def alike(query: str, texts: Sequence[str]) -> list[float]:
    """Every text is just like the query."""
    return [1.0 for _ in texts]


def test_the_registry_names_what_it_knows(similarities: dict[str, Any]) -> None:
    assert {"jaccard", "bm25"} <= set(similarities)
    assert public_register_similarity is register_similarity
    with pytest.raises(ValueError, match=r"unknown similarity 'nope'; known: bm25, jaccard"):
        similarity_named("nope")
    register_similarity("t_first_word")(first_word)
    assert similarity_named("t_first_word") is first_word
    with pytest.raises(ValueError, match="similarity 't_first_word' is already registered"):
        register_similarity("t_first_word")(alike)
    config = TMASConfig(similarity="t_first_word", memory_similarity="jaccard")
    assert similarities_of(config) == [first_word, similarity_named("jaccard")]
    with pytest.raises(ValueError, match="unknown similarity 'nope'"):
        similarities_of(TMASConfig(memory_similarity="nope"))


def test_a_registered_similarity_drives_dedup_and_relevance(similarities: dict[str, Any]) -> None:
    register_similarity("t_first_word")(first_word)
    existing = ["Count the apples", "Pitfall: units", "Pitfall: 3 units"]
    assert find_duplicate("Pitfall: the sign", existing, 0.5) is None  # by Jaccard
    assert find_duplicate("Pitfall: the sign", existing, 0.5, "t_first_word") == 1
    # the numbers must still be the same: a dedup rule, not part of the measure
    assert find_duplicate("Pitfall: 4 units", existing, 0.5, "t_first_word") is None
    assert is_near_duplicate("Pitfall: 3 apples", "Pitfall: 3 units", 0.5, "t_first_word")

    proposals = [
        {"text": "Pitfall: units dropped", "iteration": 1, "source_index": 0, "kind": "pitfall"},
        {"text": "Pitfall: sign flipped", "iteration": 1, "source_index": 1, "kind": "pitfall"},
    ]
    by_jaccard, _ = merge_into_bank([], proposals, threshold=0.6, cap=10, id_prefix="e")
    by_first, added = merge_into_bank(
        [], proposals, threshold=0.6, cap=10, id_prefix="e", similarity="t_first_word"
    )
    assert len(by_jaccard) == 2
    assert added == 1 and by_first[0]["hits"] == 2

    bank = [
        {"id": "a", "text": "apples cost 3 each", "hits": 1},
        {"id": "b", "text": "Trains: how fast apples travel", "hits": 1},
    ]
    context = "Trains and apples cost"
    assert [e["id"] for e in relevant_experiences(bank, context, 1)] == ["a"]
    ranked = relevant_experiences(bank, context, 1, similarity="t_first_word")
    assert [e["id"] for e in ranked] == ["b"]
    with pytest.raises(ValueError, match="unknown similarity 'nope'"):
        relevant_experiences(bank, context, 0, similarity="nope")


def test_the_delm_gate_uses_the_chosen_similarity(similarities: dict[str, Any]) -> None:
    register_similarity("t_first_word")(first_word)
    board = ["Distance: the train covers 120 km"]
    note, evidence = "Distance: the car covers 120 km", "both move for 2 hours"
    assert deterministic_problems(note, evidence, board, max_chars=500, dedup_threshold=0.8) == []
    assert deterministic_problems(
        note, evidence, board, max_chars=500, dedup_threshold=0.8, similarity="t_first_word"
    ) == ["duplicate of a note already on the board"]

    router = ModelRouter(ScriptedChatModel())
    gate = VerificationGate(
        router,
        role="verifier",
        max_chars=500,
        dedup_threshold=0.8,
        max_tokens=64,
        similarity="t_first_word",
    )
    result = gate.check(PROBLEM, note, evidence, board, seed=1)
    assert not result.accepted and result.judge_call is None
    assert result.reasons == ["duplicate of a note already on the board"]
    with pytest.raises(ValueError, match="unknown similarity 'nope'; known: "):
        VerificationGate(
            router, role="verifier", max_chars=5, dedup_threshold=0.8, max_tokens=8,
            similarity="nope",
        )  # fmt: skip
    with pytest.raises(ValueError, match="unknown similarity 'nope'; known: "):
        build_graph(load_bundled("delm"), llm=router, config={"similarity": "nope"})


def banks_after_a_run(spec: Any, settings: dict[str, Any]) -> dict[str, Any]:
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("18", "17", "16")))
    graph = build_graph(spec, llm=ModelRouter(model), config=settings)
    return graph.invoke({"problem": PROBLEM})


def test_the_setting_and_the_spec_choose_the_dedup_of_a_real_run(
    similarities: dict[str, Any],
) -> None:
    register_similarity("t_alike")(alike)
    spec = load_bundled("tmas")
    default = banks_after_a_run(spec, SMALL)
    assert len(default["experience_bank"]) == 2  # "Verified: ..." and "Pitfall: ..."
    assert len(default["guideline_bank"]) > 1  # the scripted strategies differ
    for final in (
        banks_after_a_run(spec, {**SMALL, "similarity": "t_alike"}),  # --set similarity=t_alike
        banks_after_a_run(spec.with_config(similarity="t_alike"), SMALL),  # config: {...}
    ):
        assert len(final["experience_bank"]) == 1
        assert len(final["guideline_bank"]) == 1
        assert final["guideline_bank"][0]["hits"] > 1


def scripted_manager(storage: Any) -> RunManager:
    model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
    return RunManager(storage, router_factory=lambda plan: ModelRouter(model))


@pytest.mark.parametrize("field", ["similarity", "memory_similarity"])
def test_an_unknown_similarity_is_refused_before_the_run_is_saved(
    tmp_path: Path, field: str
) -> None:
    storage = open_storage(tmp_path / "runs.sqlite", for_writing=True)
    try:
        manager = scripted_manager(storage)
        config = TMASConfig(**{**SMALL, field: "nope", "memory": "m"})
        with pytest.raises(ValueError, match="unknown similarity 'nope'; known: bm25, jaccard"):
            manager.start(
                "r1",
                problem=PROBLEM,
                gold_answer=None,
                plan=plan_run(load_bundled("tmas"), config, BackendSpec()),
                show_progress=False,
            )
        assert storage.registry.all() == []
        assert saved_state(storage, "r1") == {}
    finally:
        storage.close()


def test_the_similarity_is_part_of_the_evaluation_identity() -> None:
    spec, backend = load_bundled("tmas"), BackendSpec(model="m")
    default = run_identity("tmas", TMASConfig(), backend, spec, [])
    chosen = run_identity("tmas", TMASConfig(similarity="bm25"), backend, spec, [])
    retrieval = run_identity("tmas", TMASConfig(memory_similarity="jaccard"), backend, spec, [])
    assert identity_changes(default, chosen) == ["config.similarity: 'jaccard' -> 'bm25'"]
    assert identity_changes(default, retrieval) == ["config.memory_similarity: 'bm25' -> 'jaccard'"]
    saved_before = {**default, "config": {
        k: v for k, v in default["config"].items() if k not in ("similarity", "memory_similarity")
    }}  # fmt: skip
    assert identity_changes(saved_before, default) == []  # saved before the fields: the defaults


PLUGIN_SOURCE = textwrap.dedent(
    """
    from tmas.plugin import register_similarity

    @register_similarity("{name}")
    def everything_alike(query, texts):
        return [1.0 for _ in texts]
    """
)


def write_plugin(folder: Path, name: str) -> Path:
    path = folder / f"{name}_plugin.py"
    path.write_text(PLUGIN_SOURCE.replace("{name}", name), encoding="utf-8")
    return path


def test_a_spec_naming_a_plugin_similarity_saves_its_plugin(
    tmp_path: Path, similarities: dict[str, Any]
) -> None:
    path = write_plugin(tmp_path, "t_plugin_alike")
    load_plugin(str(path))  # imported by hand: not named to the run
    spec = load_bundled("tmas")
    assert run_plugins(spec) == []
    assert run_plugins(spec.with_config(similarity="t_plugin_alike")) == [str(path.resolve())]
    assert run_plugins(spec.with_config(memory_similarity="t_plugin_alike")) == [
        str(path.resolve())
    ]
    assert run_plugins(spec.with_config(similarity="bm25")) == []  # built-ins: no plugin


def test_set_similarity_on_the_command_line(tmp_path: Path, similarities: dict[str, Any]) -> None:
    path = write_plugin(tmp_path, "t_cli_alike")
    home = tmp_path / "home"
    args = ["solve", PROBLEM, "-n", "3", "-m", "1", "-t", "2", "--quiet", "--plugin", str(path)]
    with FakeOpenAIServer(ScriptedReplies(answers=("18", "17", "16"))) as server:
        backend = ["--base-url", server.base_url, "--model", "scripted"]
        for run_id, chosen in (("plain", []), ("alike", ["--set", "similarity=t_cli_alike"])):
            result = CliRunner().invoke(
                app, [*args, *backend, "--run-id", run_id, *chosen], env={"TMAS_HOME": str(home)}
            )
            assert result.exit_code == 0, result.output
    storage = open_storage(home / "runs.sqlite")
    try:
        plain, chosen_run = saved_state(storage, "plain"), saved_state(storage, "alike")
        assert saved_plan(storage.registry.get("alike")).config.similarity == "t_cli_alike"
    finally:
        storage.close()
    assert len(plain["guideline_bank"]) > 1
    assert len(chosen_run["guideline_bank"]) == 1 and len(chosen_run["experience_bank"]) == 1


@pytest.mark.parametrize("field", ["similarity", "memory_similarity"])
def test_set_an_unknown_similarity_on_the_command_line(tmp_path: Path, field: str) -> None:
    home = tmp_path / "home"
    for graph in ("tmas", "majority_vote"):  # with banks or without: refused all the same
        result = CliRunner().invoke(
            app, ["solve", PROBLEM, "--graph", graph, "--set", f"{field}=nope"],
            env={"TMAS_HOME": str(home)},
        )  # fmt: skip
        assert result.exit_code == 2, result.output
        assert "unknown similarity 'nope'; known: bm25, jaccard" in " ".join(result.stderr.split())
        assert not (home / "runs.sqlite").exists()


# ---- lifelong memory: BM25 retrieval as before the similarities were named ----


def bm25_ranking_before(items: list[dict[str, Any]], query: str, k: int) -> list[str]:
    """Lifelong-memory retrieval as it was written before similarities had names: raw Okapi
    BM25 over content words, items sharing no content word left out, hits + uses on ties."""
    chosen = []
    for kind in ("experience", "guideline"):
        pool = [item for item in items if item["kind"] == kind]
        if not pool:
            continue
        scores = BM25Okapi([content_words(i["text"]) or ["_"] for i in pool]).get_scores(
            content_words(query)
        )
        words = set(content_words(query))
        ranked = sorted(
            ((s, i) for s, i in zip(scores, pool, strict=True)
             if words & set(content_words(i["text"]))),
            key=lambda pair: (pair[0], pair[1]["hits"] + pair[1]["uses"]),
            reverse=True,
        )  # fmt: skip
        chosen += [i["id"] for _, i in ranked[:k]]
    return chosen


VOCABULARY = "apples trains units sign discount tax speed hours angle carry the of 3 7 is".split()


@pytest.mark.parametrize("seed", range(20))
def test_bm25_retrieval_is_unchanged(seed: int) -> None:
    draw = random.Random(seed)
    rows = [
        {
            "id": f"i{n}",
            "kind": draw.choice(["experience", "guideline"]),
            "text": " ".join(draw.choices(VOCABULARY, k=draw.randint(0, 6))),
            "hits": draw.randint(1, 3),
            "uses": draw.randint(0, 2),
            "runs": ["r"],
            "created_at": float(n),
        }
        for n in range(draw.randint(1, 25))
    ]
    rows += [dict(rows[0], id="copy")]  # equal BM25 scores: hits and uses decide
    memory = LifelongMemory(InMemoryStore(), "m")
    memory.import_items(rows)
    items = memory.items()
    for query in ("how many apples per hour", "the sign of the tax", "speed of 3 trains", "x"):
        k = draw.randint(1, 8)
        assert [i["id"] for i in memory.retrieve(query, k)] == bm25_ranking_before(items, query, k)


def test_bm25_scores_lie_in_the_unit_interval_and_keep_bm25_order() -> None:
    texts = ["apples cost 3", "apples apples", "trains", "", "apples and trains"]
    scores = bm25_scores("apples", texts)
    assert all(0.0 <= s <= 1.0 for s in scores) and max(scores) == 1.0
    assert scores[2] == scores[3] == 0.0  # no content word shared
    raw = BM25Okapi([content_words(t) or ["_"] for t in texts]).get_scores(["apples"])
    shared = [0, 1, 4]
    assert sorted(shared, key=lambda i: raw[i]) == sorted(shared, key=lambda i: scores[i])
    assert bm25_scores("apples", []) == []
    assert not any(math.isnan(s) for s in bm25_scores("apples", ["apples"]))


def test_the_lifelong_memory_uses_its_named_similarities(similarities: dict[str, Any]) -> None:
    register_similarity("t_first_word")(first_word)
    memory = LifelongMemory(InMemoryStore(), "m", similarity="t_first_word",
                            retrieval="t_first_word")  # fmt: skip
    pitfall = {"kind": "experience", "type": "pitfall", "iteration": 1, "score": 0.9}
    assert memory.admit("r1", "p", [{**pitfall, "text": "Pitfall: units", "source_index": 0}])
    assert memory.admit("r2", "p", [{**pitfall, "text": "Pitfall: a sign", "source_index": 0}]) == 0
    assert [(i["text"], i["hits"]) for i in memory.items()] == [("Pitfall: units", 2)]
    assert [i["text"] for i in memory.retrieve("Pitfall? what else", 3)] == ["Pitfall: units"]
    assert memory.retrieve("Units first", 3) == []
    with pytest.raises(ValueError, match="unknown similarity 'nope'"):
        LifelongMemory(InMemoryStore(), "m", retrieval="nope")
