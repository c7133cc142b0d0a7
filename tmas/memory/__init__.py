"""Per-problem memory: the experience bank, the guideline bank and their deduplication."""
