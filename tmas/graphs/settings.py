"""A topology's settings: its spec's ``config:`` block under the settings a caller gives.

A run's config is resolved once, by :func:`tmas.graphs.run_plan.plan_run` (which the command
line, the Python API, ``tmas serve`` and evaluations call), through
:func:`tmas.config.merged_config`, the one merge of settings; this is the same resolution for
a caller who wants the config alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tmas.config import TMASConfig, merged_config
from tmas.graphs.spec import GraphSpec


def topology_config(
    spec: GraphSpec, config: TMASConfig | Mapping[str, Any] | None = None
) -> TMASConfig:
    """The config a run of ``spec`` uses: defaults, then the spec's ``config:`` block, then
    the settings given (a ``TMASConfig``'s explicitly set fields, or a mapping). Round widths
    given set the number of iterations unless it is given too. ConfigError names a bad field.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> config = topology_config(load_bundled("majority_vote"), TMASConfig(n_candidates=3))
        >>> config.max_iterations, config.n_candidates
        (1, 3)
        >>> topology_config(load_bundled("self_refine"), {"n_verifications": 2}).n_verifications
        2
    """
    return merged_config(spec.config, config)
