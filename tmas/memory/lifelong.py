"""Lifelong memory: experience and guideline items kept across problems in a LangGraph Store
(the run database's own: SQLite or PostgreSQL), one namespace per memory name.

Items enter only from well-verified rollouts (a verification score at or above a threshold)
and only of the types that carry over to other problems (pitfalls and strategies),
near-duplicates reinforce an existing item instead of adding one, and a namespace keeps at
most ``cap`` items (the least reinforced, least used, oldest go first). Every write is keyed
by the run it comes from, so admitting a run's items again (a resumed run) changes nothing.
Retrieval ranks items by their relevance to a new problem, by a named similarity
(:mod:`tmas.memory.similarity`; BM25 by default), as dedup is by one (Jaccard by default).

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> memory = LifelongMemory(InMemoryStore(), "gsm8k")
    >>> memory.admit("r1", "Tom has 3 apples", [
    ...     {"kind": "experience", "type": "pitfall", "text": "Pitfall: add, do not multiply",
    ...      "iteration": 1, "source_index": 0, "score": 0.9},
    ...     {"kind": "guideline", "text": "Count step by step", "iteration": 1,
    ...      "source_index": 1, "score": 0.2}])
    1
    >>> [item["text"] for item in memory.retrieve("How many apples do they add?", 3)]
    ['Pitfall: add, do not multiply']
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from hashlib import sha1
from typing import TYPE_CHECKING, Any

from tmas.memory.dedup import find_duplicate
from tmas.memory.similarity import similarity_named

if TYPE_CHECKING:  # LangGraph loads when a run starts, not with this module
    from langgraph.store.base import BaseStore

ROOT = "tmas_memory"
KINDS = ("experience", "guideline")
PAGE = 1_000
PROBLEM_CHARS = 300  # of the source problem kept as provenance
# What carries over to another problem: failure patterns and strategies. Conclusions and notes
# state facts of their own problem ("Janet's ducks lay 16 eggs per day") and stay with it.
TRANSFERABLE = ("pitfall", "strategy")


class LifelongMemoryError(LookupError):
    """An unknown memory namespace, or an item file that cannot be read."""


def item_type(proposal: Mapping[str, Any]) -> str:
    """What an item says: an experience's ``conclusion``, ``pitfall`` or ``note``; a
    guideline's ``strategy``.

    Example:
        >>> item_type({"kind": "guideline"}), item_type({"kind": "experience", "type": "pitfall"})
        ('strategy', 'pitfall')
    """
    if proposal["kind"] == "guideline":
        return "strategy"
    return str(proposal.get("type") or "note")


def namespaces(store: BaseStore) -> list[str]:
    """The names of the memories in ``store``.

    Example:
        >>> from langgraph.store.memory import InMemoryStore
        >>> store = InMemoryStore()
        >>> store.put((ROOT, "math"), "k", {"text": "x"})
        >>> namespaces(store)
        ['math']
    """
    found = store.list_namespaces(prefix=(ROOT,), max_depth=2, limit=PAGE)
    return sorted({ns[1] for ns in found if len(ns) == 2})


def retrieval_text(item: Mapping[str, Any]) -> str:
    """What retrieval matches a new problem against: the item's text and its source problem.

    Example:
        >>> retrieval_text({"text": "Work backwards", "provenance": {"problem": "Tom has 3"}})
        'Work backwards\\nTom has 3'
    """
    source = (item.get("provenance") or {}).get("problem") or ""
    return f"{item['text']}\n{source}".strip()


class LifelongMemory:
    """One named memory in a store; see the module's docstring. ``similarity`` names the
    similarity near-duplicates are found by (at least ``threshold``), ``retrieval`` the one
    items are ranked by; an unknown name is refused here (ValueError naming the known ones).
    """

    def __init__(
        self,
        store: BaseStore,
        name: str,
        *,
        cap: int = 500,
        threshold: float = 0.6,
        min_score: float = 0.75,
        types: Sequence[str] = TRANSFERABLE,
        clock: Any = time.time,
        similarity: str = "jaccard",
        retrieval: str = "bm25",
    ) -> None:
        for named in (similarity, retrieval):
            similarity_named(named)  # an unknown name is refused now, not mid-run
        self.store = store
        self.name = name
        self.namespace = (ROOT, name)
        self.cap = cap
        self.threshold = threshold
        self.min_score = min_score
        self.types = tuple(types)
        self.clock = clock
        self.similarity = similarity
        self.retrieval = retrieval

    # -- reading -------------------------------------------------------------------------------

    def items(self) -> list[dict[str, Any]]:
        """Every item, oldest first."""
        found: list[dict[str, Any]] = []
        while True:
            page = self.store.search(self.namespace, limit=PAGE, offset=len(found))
            found.extend(dict(item.value) for item in page)
            if len(page) < PAGE:
                break
        return sorted(found, key=lambda item: (item["created_at"], item["id"]))

    def exists(self) -> bool:
        """Whether the memory holds anything."""
        return bool(self.store.search(self.namespace, limit=1))

    def require(self) -> LifelongMemory:
        """This memory, or LifelongMemoryError naming the ones there are."""
        if not self.exists():
            known = ", ".join(namespaces(self.store)) or "none yet"
            raise LifelongMemoryError(f"no memory named {self.name!r} (memories: {known})")
        return self

    def retrieve(self, query: str, k: int, kind: str | None = None) -> list[dict[str, Any]]:
        """The ``k`` items of each kind (or of ``kind``) most relevant to ``query`` by the
        ``retrieval`` similarity, each item read with the start of the problem it came from (a
        strategy such as "work backwards" names no problem's words; its source problem does).
        Items it scores 0, for BM25 those sharing no content word with the query, are left
        out; more reinforced and used ones come first on ties."""
        chosen: list[dict[str, Any]] = []
        items = self.items()
        measure = similarity_named(self.retrieval)
        for each in (kind,) if kind else KINDS:
            pool = [item for item in items if item["kind"] == each]
            if not pool or k <= 0:
                continue
            scores = measure(query, [retrieval_text(item) for item in pool])
            ranked = sorted(
                ((score, item) for score, item in zip(scores, pool, strict=True) if score > 0),
                key=lambda pair: (pair[0], pair[1]["hits"] + pair[1]["uses"]),
                reverse=True,
            )
            chosen.extend(item for _, item in ranked[:k])
        return chosen

    # -- writing -------------------------------------------------------------------------------

    def admit(self, run_id: str, problem: str, proposals: Iterable[Mapping[str, Any]]) -> int:
        """Keep the proposals of run ``run_id`` whose rollout scored at least ``min_score``:
        each is a dict with ``kind``, ``text``, ``iteration``, ``source_index``, ``score``
        (and an experience's ``type``). Returns how many new items entered; a run admitted
        again adds and reinforces nothing."""
        items = self.items()
        added = 0
        for proposal in proposals:
            score = proposal.get("score")
            text = str(proposal.get("text", "")).strip()
            if not text or score is None or score < self.min_score:
                continue
            if item_type(proposal) not in self.types:
                continue
            same_kind = [item for item in items if item["kind"] == proposal["kind"]]
            if any(run_id in item["runs"] for item in same_kind if item["text"] == text):
                continue  # this run's own item, admitted before
            texts = [item["text"] for item in same_kind]
            duplicate = find_duplicate(text, texts, self.threshold, self.similarity)
            if duplicate is not None:
                item = same_kind[duplicate]
                if run_id not in item["runs"]:
                    item["hits"] += 1
                    item["runs"] = [*item["runs"], run_id]
                    self.store.put(self.namespace, item["id"], item)
                continue
            item = self._new_item(run_id, problem, proposal, text, float(score))
            self.store.put(self.namespace, item["id"], item)
            items.append(item)
            added += 1
        self._cap(items)
        return added

    def _new_item(
        self, run_id: str, problem: str, proposal: Mapping[str, Any], text: str, score: float
    ) -> dict[str, Any]:
        iteration, source = proposal.get("iteration"), proposal.get("source_index")
        kind = proposal["kind"]
        now = self.clock()
        return {
            "id": f"{run_id}.{kind[0]}{iteration}.{source}.{sha1(text.encode()).hexdigest()[:8]}",
            "kind": kind,
            "type": item_type(proposal),
            "text": text,
            "score": score,
            "provenance": {
                "run_id": run_id,
                "problem": problem[:PROBLEM_CHARS],
                "iteration": iteration,
                "candidate": source,
                "verification_score": score,
            },
            "runs": [run_id],
            "used_by": [],
            "hits": 1,
            "uses": 0,
            "created_at": now,
            "last_used_at": None,
        }

    def mark_used(self, run_id: str, item_ids: Sequence[str]) -> None:
        """Count that run ``run_id`` showed these items to its agents (once per run)."""
        for item_id in item_ids:
            found = self.store.get(self.namespace, item_id)
            if found is None or run_id in found.value["used_by"]:
                continue
            item = dict(found.value)
            item["used_by"] = [*item["used_by"], run_id]
            item["uses"] += 1
            item["last_used_at"] = self.clock()
            self.store.put(self.namespace, item_id, item)

    def _cap(self, items: list[dict[str, Any]]) -> None:
        if len(items) > self.cap:
            for item in sorted(items, key=self._worth)[: len(items) - self.cap]:
                self.store.delete(self.namespace, item["id"])

    @staticmethod
    def _worth(item: Mapping[str, Any]) -> tuple[int, float]:
        """What keeps an item: reinforcement and use, then how recently it was made or used."""
        return item["hits"] + item["uses"], item["last_used_at"] or item["created_at"]

    def prune(
        self, *, keep: int | None = None, older_than_s: float | None = None, min_hits: int = 0
    ) -> int:
        """Delete items: those not used or made within ``older_than_s``, those reinforced fewer
        than ``min_hits`` times, then all but the ``keep`` worth keeping most. Returns how many
        went."""
        now = self.clock()
        items = self.items()
        doomed = {
            item["id"]
            for item in items
            if item["hits"] < min_hits
            or (older_than_s is not None and now - self._worth(item)[1] > older_than_s)
        }
        rest = [item for item in items if item["id"] not in doomed]
        if keep is not None and len(rest) > keep:
            doomed |= {item["id"] for item in sorted(rest, key=self._worth)[: len(rest) - keep]}
        for item_id in doomed:
            self.store.delete(self.namespace, item_id)
        return len(doomed)

    def import_items(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Put exported items back (an item with the same id is replaced); how many."""
        count = 0
        for row in rows:
            missing = {"id", "kind", "text", "hits", "uses", "runs", "created_at"} - set(row)
            if missing or row["kind"] not in KINDS:
                shown = str(dict(row))[:200]
                raise LifelongMemoryError(f"not a memory item (missing {sorted(missing)}): {shown}")
            item = {"used_by": [], "last_used_at": None, "provenance": {}, "score": None,
                    "type": "note", **row}  # fmt: skip
            self.store.put(self.namespace, str(item["id"]), item)
            count += 1
        self._cap(self.items())
        return count
