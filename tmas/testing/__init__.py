"""Deterministic stand-ins for language models, for tests of wiring and faults."""
