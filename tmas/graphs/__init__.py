"""Topologies: the bundled specs (``specs/*.yaml``, one definition each), the spec format, its
validator and compiler, and the registries of node types, task builders, planners, stop
conditions and selection rules. Build a graph with :func:`tmas.build_graph`."""
