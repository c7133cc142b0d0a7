"""Seeing topologies and runs: diagrams in four formats and the reasoning-flow viewer."""
