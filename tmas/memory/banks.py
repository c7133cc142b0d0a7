"""Merging proposals into the capped, deduplicated experience and guideline banks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from tmas.memory.dedup import find_duplicate
from tmas.memory.similarity import similarity_named
from tmas.state import Experience, Guideline

Item = TypeVar("Item", Experience, Guideline)
ORIGIN = "memory"  # marks the bank items that came from a lifelong memory


def merge_into_bank(
    bank: list[Item],
    proposals: list[dict[str, Any]],
    *,
    threshold: float,
    cap: int,
    id_prefix: str,
    similarity: str = "jaccard",
) -> tuple[list[Item], int]:
    """Add proposals to ``bank``, reinforcing near-duplicates instead of adding them.

    A proposal is a dict with ``text``, ``iteration``, ``source_index`` (and ``kind`` for
    experiences). A near-duplicate (:func:`~tmas.memory.dedup.find_duplicate` by the similarity
    named ``similarity``, at least ``threshold``) of an item already in the bank raises that
    item's ``hits``. When the bank is over ``cap``, new items stay (a full bank must keep
    learning) and the least reinforced, oldest old items are dropped. Returns the new bank and
    how many new items entered it.

    Example:
        >>> bank, added = merge_into_bank([], [
        ...     {"text": "x is 3", "iteration": 1, "source_index": 0},
        ...     {"text": "x is 3", "iteration": 1, "source_index": 1}],
        ...     threshold=0.8, cap=10, id_prefix="e")
        >>> added, bank[0]["hits"]
        (1, 2)
    """
    merged: list[Any] = [dict(item) for item in bank]
    added = 0
    for proposal in sorted(proposals, key=lambda p: (p["iteration"], p["source_index"])):
        text = proposal["text"].strip()
        if not text:
            continue
        duplicate = find_duplicate(text, [item["text"] for item in merged], threshold, similarity)
        if duplicate is not None:
            merged[duplicate]["hits"] += 1
            continue
        item = {
            "id": f"{id_prefix}{proposal['iteration']}.{proposal['source_index']}.{added}",
            "text": text,
            "iteration": proposal["iteration"],
            "source_index": proposal["source_index"],
            "hits": 1,
        }
        if "kind" in proposal:
            item["kind"] = proposal["kind"]
        merged.append(item)
        added += 1
    old_ids = {b["id"] for b in bank}
    kept = _cap(merged, cap, old_ids)
    return kept, sum(1 for it in kept if it["id"] not in old_ids)


def _cap(items: list[Any], cap: int, old_ids: set[str]) -> list[Any]:
    """Keep at most ``cap`` items: new ones first (a full bank must still learn), then the
    most reinforced, most recent old ones; declaration order is preserved."""
    if len(items) <= cap:
        return items
    new = [it for it in items if it["id"] not in old_ids][:cap]
    old = sorted(
        (it for it in items if it["id"] in old_ids),
        key=lambda it: (it["hits"], it["iteration"]),
        reverse=True,
    )[: cap - len(new)]
    kept = {it["id"] for it in new + old}
    return [it for it in items if it["id"] in kept]


def relevant_experiences(
    bank: list[Experience], context: str, limit: int, similarity: str = "jaccard"
) -> list[Experience]:
    """The ``limit`` experiences most related to ``context`` by the similarity named
    ``similarity``, more-reinforced ones first on ties.

    Example:
        >>> bank = [{"id": "a", "text": "apples cost 3", "hits": 1},
        ...         {"id": "b", "text": "trains are fast", "hits": 5}]
        >>> [e["id"] for e in relevant_experiences(bank, "how much do apples cost", 1)]
        ['a']
    """
    measure = similarity_named(similarity)
    if limit <= 0 or not bank:
        return []
    scores = measure(context, [e["text"] for e in bank])
    ranked = sorted(
        zip(scores, bank, strict=True),
        key=lambda pair: (pair[0], pair[1].get("hits", 1)),
        reverse=True,
    )
    return [experience for _, experience in ranked[:limit]]


def remembered_items(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The bank items a state holds from a lifelong memory (``origin: memory``; runs saved
    before remembered strategies became lessons hold some in the guideline bank).

    Example:
        >>> remembered_items({"experience_bank": [{"id": "m:x", "origin": "memory"},
        ...     {"id": "e1"}], "guideline_bank": [{"id": "m:y", "origin": "memory"}]})
        [{'id': 'm:x', 'origin': 'memory'}, {'id': 'm:y', 'origin': 'memory'}]
    """
    banks = list(state.get("experience_bank") or []) + list(state.get("guideline_bank") or [])
    return [item for item in banks if item.get("origin") == ORIGIN]
