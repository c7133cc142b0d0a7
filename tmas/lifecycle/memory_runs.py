"""A run with lifelong memory (``config.memory``): its banks start with the memory's items most
relevant to its problem, and once it finishes its well-verified items are kept there
(:mod:`tmas.memory.lifelong`). Both happen in the run manager, for every topology with banks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.store.base import BaseStore

from tmas.config import TMASConfig
from tmas.memory.banks import ORIGIN, remembered_items
from tmas.memory.lifelong import LifelongMemory
from tmas.storage import Storage


def open_memory(storage: Storage, config: TMASConfig) -> LifelongMemory | None:
    """The run's memory in the run database's store, or None when the run keeps none."""
    if config.memory is None:
        return None
    return memory_in(storage.store(), config)


def memory_in(store: BaseStore, config: TMASConfig) -> LifelongMemory:
    """The memory ``config`` names (``config.memory``), with its caps, gate and similarities,
    in ``store``.

    Example:
        >>> from langgraph.store.memory import InMemoryStore
        >>> memory = memory_in(InMemoryStore(), TMASConfig(memory="traps", memory_types=[]))
        >>> memory.name, memory.types
        ('traps', ())
    """
    if config.memory is None:
        raise ValueError("the config names no memory (memory: NAME)")
    return LifelongMemory(
        store,
        config.memory,
        cap=config.memory_cap,
        threshold=config.dedup_threshold,
        min_score=config.memory_min_score,
        types=config.memory_types,
        similarity=config.similarity,
        retrieval=config.memory_similarity,
    )


LESSON_LEADS = {
    "strategy": "A strategy that worked on a similar problem",
    "pitfall": "A pitfall met on a similar problem",
    "conclusion": "A conclusion verified on a similar problem",
    "note": "A note from a similar problem",
}
"""How a prompt introduces a remembered item, by its type: every one is offered as a lesson."""
SOURCE_CHARS = 70  # of the source problem a lesson quotes


def lesson_text(item: Mapping[str, Any]) -> str:
    """A memory item as the lesson a prompt shows: what it is, where it comes from (the start
    of its problem, the verification score of its rollout) and what it says.

    Example:
        >>> lesson_text({"type": "strategy", "text": "Work backwards",
        ...     "score": 0.9, "provenance": {"problem": "Tom has 3 apples."}})
        'A strategy that worked on a similar problem ("Tom has 3 apples.", verified 0.90): \
Work backwards'
    """
    kind = str(item.get("type") or "note")
    text = str(item["text"]).strip()
    if text.lower().startswith(f"{kind}:"):  # "Pitfall: ..." says its kind already
        text = text[len(kind) + 1 :].strip()
    source = " ".join(str((item.get("provenance") or {}).get("problem") or "").split())
    if len(source) > SOURCE_CHARS:
        source = source[: SOURCE_CHARS - 3].rstrip() + "..."
    score = item.get("score")
    origin = ", ".join(
        part for part in (f'"{source}"' if source else "",
                          f"verified {score:.2f}" if score is not None else "") if part
    )  # fmt: skip
    lead = LESSON_LEADS.get(kind, LESSON_LEADS["note"])
    return f"{lead} ({origin}): {text}" if origin else f"{lead}: {text}"


BANK_ID_PREFIX = "m:"
"""What a remembered item's bank id adds before its id in the memory."""


def memory_id(bank_id: str) -> str:
    """The memory's own id of a remembered bank item (:func:`as_bank_item`).

    Example:
        >>> memory_id("m:lesson-cuts")
        'lesson-cuts'
    """
    return bank_id.removeprefix(BANK_ID_PREFIX)


def as_bank_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """A memory item as an experience-bank item, whatever its kind: a lesson (its text from
    :func:`lesson_text`) of iteration 0, no source candidate, marked as memory's, with its
    provenance. Remembered strategies are lessons too, never guidelines: the guideline bank
    is what explore prompts tell solvers to avoid.

    Example:
        >>> bank_item = as_bank_item({"id": "r1.g1.0.ab", "kind": "guideline",
        ...     "type": "strategy", "text": "Work backwards", "hits": 2})
        >>> bank_item["origin"], bank_item["kind"], bank_item["text"]
        ('memory', 'strategy', 'A strategy that worked on a similar problem: Work backwards')
    """
    kind = str(item.get("type") or "note")
    return {
        "id": f"{BANK_ID_PREFIX}{item['id']}",
        "text": lesson_text(item),
        "kind": kind if kind in LESSON_LEADS else "note",
        "iteration": 0,
        "source_index": -1,
        "hits": int(item.get("hits", 1)),
        "origin": ORIGIN,
        "provenance": dict(item.get("provenance") or {}),
    }


def seeded_banks(storage: Storage, config: TMASConfig, problem: str) -> dict[str, Any]:
    """The first input's banks: the memory's ``memory_items`` most relevant items of each kind,
    all as lessons in the experience bank ({} without memory). The guideline bank starts
    empty: it holds the strategies this problem's own attempts used."""
    memory = open_memory(storage, config)
    if memory is None:
        return {}
    found = memory.retrieve(problem, config.memory_items)
    return {"experience_bank": [as_bank_item(i) for i in found]}


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
    shown = [memory_id(item["id"]) for item in remembered_items(state)]
    memory.mark_used(run_id, shown)
    return memory.admit(run_id, problem, proposals_of(state))
