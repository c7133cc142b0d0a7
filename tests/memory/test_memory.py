"""Experience and guideline banks: Jaccard dedup, reinforcement, caps and retrieval."""

from __future__ import annotations

from typing import Any

import pytest

from tmas import build_tmas_graph
from tmas.config import TMASConfig
from tmas.memory.banks import merge_into_bank, relevant_experiences
from tmas.memory.dedup import find_duplicate
from tmas.memory.similarity import jaccard, word_set
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies


def item(id_: str, text: str, hits: int = 1, iteration: int = 1) -> dict[str, Any]:
    return {"id": id_, "text": text, "iteration": iteration, "source_index": 0, "hits": hits}


def proposal(text: str, iteration: int = 2, source_index: int = 0, **extra: Any) -> dict[str, Any]:
    return {"text": text, "iteration": iteration, "source_index": source_index, **extra}


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("the total is 18", "the total is 18", 1.0),
        ("the total is 18", "total is 18", 0.75),
        ("The TOTAL, is 18!", "the total is 18", 1.0),
        ("apples and pears", "trains", 0.0),
        ("x = 3.5", "x = 3", 1 / 3),
        ("", "", 1.0),
        ("", "something", 0.0),
        ("a b c d", "c d e f", 2 / 6),
    ],
)
def test_jaccard_values(a: str, b: str, expected: float) -> None:
    assert jaccard(a, b) == pytest.approx(expected)
    assert jaccard(b, a) == pytest.approx(expected)


def test_word_set_keeps_decimals_and_ignores_case_and_punctuation() -> None:
    assert word_set("X = 3.5; x is 3.5.") == frozenset({"x", "3.5", "is"})


def test_find_duplicate_returns_the_first_close_enough_item() -> None:
    existing = ["unrelated words here", "the total is 18", "total is 18"]
    assert find_duplicate("total is 18", existing, 0.7) == 1
    assert find_duplicate("total is 18", existing, 1.0) == 2
    assert find_duplicate("nothing alike", existing, 0.5) is None
    assert find_duplicate("anything", [], 0.1) is None


def test_near_duplicate_reinforces_instead_of_adding() -> None:
    bank = [item("e1.0.0", "Verified: the total is 18", hits=1)]
    merged, added = merge_into_bank(
        bank,
        [proposal("verified the total is 18.", kind="conclusion")],
        threshold=0.6,
        cap=10,
        id_prefix="e",
    )
    assert added == 0
    assert len(merged) == 1
    assert merged[0]["hits"] == 2
    assert merged[0]["text"] == "Verified: the total is 18"
    assert bank[0]["hits"] == 1  # the input bank is not mutated


def test_distinct_proposals_are_added_with_ids_and_kinds() -> None:
    bank = [item("e1.0.0", "Verified: the total is 18")]
    merged, added = merge_into_bank(
        bank,
        [
            proposal("Pitfall: dropped the units", source_index=1, kind="pitfall"),
            proposal("  ", source_index=2, kind="note"),  # blank: skipped
            proposal("Verified: x equals 3 exactly", source_index=0, kind="conclusion"),
        ],
        threshold=0.6,
        cap=10,
        id_prefix="e",
    )
    assert added == 2
    assert [it["text"] for it in merged] == [
        "Verified: the total is 18",
        "Verified: x equals 3 exactly",  # proposals are merged in (iteration, source) order
        "Pitfall: dropped the units",
    ]
    new = merged[1:]
    assert [it["kind"] for it in new] == ["conclusion", "pitfall"]
    assert all(it["hits"] == 1 and it["iteration"] == 2 for it in new)
    assert all(it["id"].startswith("e2.") for it in new)
    assert len({it["id"] for it in merged}) == 3


def test_duplicates_within_one_batch_collapse() -> None:
    merged, added = merge_into_bank(
        [],
        [proposal("Strategy: work backwards", source_index=i) for i in range(4)],
        threshold=0.6,
        cap=5,
        id_prefix="g",
    )
    assert added == 1
    assert len(merged) == 1
    assert merged[0]["hits"] == 4
    assert "kind" not in merged[0]


def test_cap_evicts_the_least_reinforced_then_oldest() -> None:
    bank = [
        item("e1", "alpha beta gamma", hits=3, iteration=1),
        item("e2", "delta epsilon zeta", hits=1, iteration=1),
        item("e3", "eta theta iota", hits=1, iteration=2),
    ]
    merged, added = merge_into_bank(
        bank, [proposal("kappa lambda mu", iteration=3)], threshold=0.6, cap=3, id_prefix="e"
    )
    assert len(merged) == 3
    assert [it["text"] for it in merged] == [
        "alpha beta gamma",
        "eta theta iota",
        "kappa lambda mu",
    ]
    assert added == 1


def test_a_full_bank_of_reinforced_items_still_takes_new_ones() -> None:
    bank = [item("e1", "alpha beta", hits=3), item("e2", "gamma delta", hits=2)]
    merged, added = merge_into_bank(
        bank, [proposal("epsilon zeta", iteration=1)], threshold=0.6, cap=2, id_prefix="e"
    )
    assert added == 1
    assert [it["text"] for it in merged] == ["alpha beta", "epsilon zeta"]


def test_more_new_items_than_the_cap_keeps_the_first_ones() -> None:
    merged, added = merge_into_bank(
        [],
        [proposal(text, iteration=1) for text in ("one two", "three four", "five six")],
        threshold=0.6,
        cap=2,
        id_prefix="e",
    )
    assert added == 2
    assert [it["text"] for it in merged] == ["one two", "three four"]


def test_facts_with_different_numbers_are_not_merged() -> None:
    bank = [item("e1", "Verified: she sold 24 clips in May, so 72 in total", hits=1)]
    merged, added = merge_into_bank(
        bank,
        [proposal("Verified: she sold 96 clips in May, so 144 in total", iteration=2)],
        threshold=0.5,
        cap=10,
        id_prefix="e",
    )
    assert added == 1
    assert [it["hits"] for it in merged] == [1, 1]


def test_reinforcement_can_save_an_item_from_eviction() -> None:
    bank = [item("e1", "alpha beta gamma", hits=1), item("e2", "delta epsilon zeta", hits=1)]
    merged, _ = merge_into_bank(
        bank,
        [proposal("alpha beta gamma", iteration=2), proposal("eta theta iota", iteration=2)],
        threshold=0.6,
        cap=2,
        id_prefix="e",
    )
    texts = [it["text"] for it in merged]
    assert texts == ["alpha beta gamma", "eta theta iota"]
    assert merged[0]["hits"] == 2


def test_relevant_experiences_ranking() -> None:
    bank = [
        {"id": "a", "text": "apples cost 3 dollars", "hits": 1},
        {"id": "b", "text": "trains are fast", "hits": 9},
        {"id": "c", "text": "apples cost 3 dollars each", "hits": 1},
        {"id": "d", "text": "apples cost 3 dollars", "hits": 4},
    ]
    context = "how much do apples cost in dollars"
    ranked = relevant_experiences(bank, context, 4)
    assert [e["id"] for e in ranked] == ["d", "a", "c", "b"]
    assert [e["id"] for e in relevant_experiences(bank, context, 2)] == ["d", "a"]
    assert relevant_experiences(bank, context, 0) == []
    assert len(relevant_experiences(bank, context, 100)) == 4
    assert relevant_experiences([], context, 3) == []


def test_bank_sizes_stay_under_the_caps_during_a_run() -> None:
    strategies = (
        "Set up an equation",
        "Work backwards",
        "Count case by case",
        "Draw a Venn diagram",
        "Use modular arithmetic",
        "Try small cases and find a pattern",
    )
    config = TMASConfig(
        n_candidates=4,
        n_verifications=1,
        max_iterations=6,
        experience_cap=1,
        guideline_cap=2,
        epsilon=0.5,
    )
    # The guideline agent's pick hashes the rollout, so varied answers give varied strategies.
    replies = ScriptedReplies(answers=("15", "16", "17", "18", "19", "20"), strategies=strategies)
    model = ScriptedChatModel(replies=replies)
    experience_sizes: list[int] = []
    guideline_sizes: list[int] = []
    proposed: set[str] = set()
    final: dict[str, Any] = {}
    for values in build_tmas_graph(config, llm=model).stream(
        {"problem": "What is 9 + 9?"}, stream_mode="values"
    ):
        experience_sizes.append(len(values.get("experience_bank", [])))
        guideline_sizes.append(len(values.get("guideline_bank", [])))
        proposed |= {p["text"] for p in values.get("guideline_proposals", [])}
        final = values

    assert final["history"][-1]["iteration"] == 6
    assert max(experience_sizes) == 1
    assert max(guideline_sizes) == 2
    assert len(final["experience_bank"]) == 1
    assert len(final["guideline_bank"]) == 2
    # The caps really bound something: more distinct strategies were proposed than kept.
    assert len(proposed) > config.guideline_cap
    assert proposed <= set(strategies)
    kept = {g["text"] for g in final["guideline_bank"]}
    assert kept < proposed
    assert final["experience_bank"][0]["hits"] > 1
    assert all(g["hits"] >= 1 for g in final["guideline_bank"])
