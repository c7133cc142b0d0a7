"""A run with lifelong memory (``config.memory``): its banks start with the memory's items most
relevant to its problem, and once it finishes its well-verified items are kept there
(:mod:`tmas.memory.lifelong`). Both happen in the run manager, for every topology with banks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tmas.config import TMASConfig
from tmas.memory.lifelong import LifelongMemory
from tmas.storage import Storage

ORIGIN = "memory"  # marks the bank items that came from the memory


def open_memory(storage: Storage, config: TMASConfig) -> LifelongMemory | None:
    """The run's memory in the run database's store, or None when the run keeps none."""
    if config.memory is None:
        return None
    return LifelongMemory(
        storage.store(),
        config.memory,
        cap=config.memory_cap,
        threshold=config.dedup_threshold,
        min_score=config.memory_min_score,
        types=config.memory_types,
        similarity=config.similarity,
        retrieval=config.memory_similarity,
    )


def as_bank_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """A memory item as a bank item: iteration 0, no source candidate, marked as memory's.

    Example:
        >>> as_bank_item({"id": "r1.e1.0.ab", "kind": "experience", "type": "pitfall",
        ...               "text": "Pitfall: units", "hits": 2})["origin"]
        'memory'
    """
    bank_item = {
        "id": f"m:{item['id']}",
        "text": item["text"],
        "iteration": 0,
        "source_index": -1,
        "hits": int(item.get("hits", 1)),
        "origin": ORIGIN,
    }
    if item["kind"] == "experience":
        bank_item["kind"] = item["type"] if item["type"] in ("conclusion", "pitfall") else "note"
    return bank_item


def seeded_banks(storage: Storage, config: TMASConfig, problem: str) -> dict[str, Any]:
    """The first input's banks: the memory's ``memory_items`` most relevant items of each kind
    ({} without memory)."""
    memory = open_memory(storage, config)
    if memory is None:
        return {}
    found = memory.retrieve(problem, config.memory_items)
    return {
        "experience_bank": [as_bank_item(i) for i in found if i["kind"] == "experience"],
        "guideline_bank": [as_bank_item(i) for i in found if i["kind"] == "guideline"],
    }


def proposals_of(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run's own bank items with the verification score of the rollout each came from.

    Example:
        >>> proposals_of({"history": [{"iteration": 1, "scores": [0.9, 0.1]}],
        ...               "experience_bank": [{"text": "Pitfall: x", "kind": "pitfall",
        ...                                    "iteration": 1, "source_index": 1}],
        ...               "guideline_bank": []})[0]["score"]
        0.1
    """
    history = state.get("history") or []
    scores = {record["iteration"]: record.get("scores") or [] for record in history}
    found = []
    for kind, bank in (("experience", "experience_bank"), ("guideline", "guideline_bank")):
        for item in state.get(bank) or []:
            if item.get("origin") == ORIGIN:
                continue
            row = scores.get(item["iteration"], [])
            index = item["source_index"]
            score = row[index] if 0 <= index < len(row) else None
            found.append({**item, "kind": kind, "type": item.get("kind"), "score": score})
    return found


def remember(
    storage: Storage, run_id: str, problem: str, config: TMASConfig, state: Mapping[str, Any]
) -> int:
    """Keep a finished run's well-verified items and count the memory items it was shown;
    how many new items entered (0 without memory; nothing twice for one run)."""
    memory = open_memory(storage, config)
    if memory is None:
        return 0
    shown = [
        item["id"].removeprefix("m:")
        for bank in ("experience_bank", "guideline_bank")
        for item in state.get(bank) or []
        if item.get("origin") == ORIGIN
    ]
    memory.mark_used(run_id, shown)
    return memory.admit(run_id, problem, proposals_of(state))
