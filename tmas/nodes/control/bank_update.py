"""Node that merges this iteration's proposals into the experience and guideline banks."""

from __future__ import annotations

from typing import Any

from tmas.config import TMASConfig
from tmas.memory.banks import merge_into_bank
from tmas.memory.similarity import similarities_of
from tmas.nodes.events import emit
from tmas.state import RunState


class UpdateBanks:
    """Node: deduplicate (by the run's ``similarity``) and cap both banks after the reflection
    agents ran. An unknown ``similarity`` or ``memory_similarity`` (the lifelong memory that
    seeds and keeps these banks) is refused when the node is built.

    Example:
        >>> node = UpdateBanks(TMASConfig())
        >>> node({"iteration": 1, "experience_proposals": [
        ...     {"text": "Verified: x = 3", "kind": "conclusion", "iteration": 1,
        ...      "source_index": 0}]})["experience_bank"][0]["text"]
        'Verified: x = 3'
    """

    def __init__(self, config: TMASConfig) -> None:
        similarities_of(config)  # an unknown similarity is refused when the graph is built
        self.config = config

    def __call__(self, state: RunState) -> dict[str, Any]:
        experience_bank, experiences_added = merge_into_bank(
            state.get("experience_bank", []),
            state.get("experience_proposals", []),
            threshold=self.config.dedup_threshold,
            cap=self.config.experience_cap,
            id_prefix="e",
            similarity=self.config.similarity,
        )
        guideline_bank, guidelines_added = merge_into_bank(
            state.get("guideline_bank", []),
            state.get("guideline_proposals", []),
            threshold=self.config.dedup_threshold,
            cap=self.config.guideline_cap,
            id_prefix="g",
            similarity=self.config.similarity,
        )
        for kind, old, new in (
            ("experience_added", state.get("experience_bank", []), experience_bank),
            ("guideline_added", state.get("guideline_bank", []), guideline_bank),
        ):
            kept = {item["id"] for item in old}
            for item in new:
                if item["id"] not in kept:
                    emit(
                        kind,
                        iteration=item["iteration"],
                        source_index=item["source_index"],
                        text=item["text"],
                    )
        return {
            "experience_bank": experience_bank,
            "guideline_bank": guideline_bank,
            "bank_growth": {"experiences": experiences_added, "guidelines": guidelines_added},
        }
