"""How many model calls a whole run of a topology makes, before it runs (progress totals)."""

from __future__ import annotations

from dataclasses import dataclass

from tmas.config import TMASConfig
from tmas.graphs.pipeline import body_of, is_pipeline
from tmas.graphs.spec import GraphSpec, NodeSpec
from tmas.nodes.control.iteration import round_size
from tmas.nodes.control.stop_rules import early_conditions
from tmas.registration import registry


@dataclass(frozen=True)
class CallEstimate:
    """The model calls of a run. ``exact``: what a run without failed calls makes. Otherwise
    ``bound`` says whether ``total`` is the most it can make (a node's calls or an early stop
    depend on what it finds: shown "<=N") or only a guess (a fan-out whose size is not
    registered: shown "~N").

    Example:
        >>> str(CallEstimate(9)), str(CallEstimate(9, exact=False)), str(
        ...     CallEstimate(9, exact=False, bound=False))
        ('9', '<=9', '~9')
    """

    total: int
    exact: bool = True
    bound: bool = True

    def __str__(self) -> str:
        if self.exact:
            return str(self.total)
        return f"<={self.total}" if self.bound else f"~{self.total}"


def _final_round_size(spec: GraphSpec) -> int | None:
    planners = [node for node in spec.nodes if node.type == "start_iteration"]
    return planners[0].params.get("final_round_size") if planners else None


def _calls_per_run(node: NodeSpec, config: TMASConfig, width: int) -> CallEstimate:
    """The calls of one run of ``node``; a pipeline's are its body's at ``width``."""
    if is_pipeline(node):
        return iteration_calls(body_of(node), config, width)
    node_type = registry().nodes[node.type]
    if not node_type.calls_llm:
        return CallEstimate(0)
    if node_type.max_calls is not None:
        return CallEstimate(node_type.max_calls(node.params, config), exact=False)
    return CallEstimate(1)


def iteration_calls(spec: GraphSpec, config: TMASConfig, width: int) -> CallEstimate:
    """The model calls of one pass of ``spec`` over ``width`` candidates: a fan-out sends what
    its task builder's registered count says; a pipeline node fanned out runs its body once
    per task over one candidate.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> config = TMASConfig(n_verifications=2)
        >>> str(iteration_calls(load_bundled("tmas"), config, 4))
        '24'
        >>> from tmas.graphs.pipeline import bodies
        >>> str(iteration_calls(bodies(load_bundled("tmas"))["candidate"], config, 1))
        '6'
    """
    nodes = {node.id: node for node in spec.nodes}
    fanned = {t for edge in spec.edges if edge.fanout for t in edge.targets}
    total, exact, bound = 0, True, True
    for edge in spec.edges:
        if edge.fanout is None:
            continue
        if edge.fanout.copies is not None:
            tasks = edge.fanout.copies
        elif (size := getattr(registry().tasks.get(edge.fanout.tasks), "size", None)) is not None:
            tasks = size.count(config, width)
        else:
            tasks, exact, bound = width, False, False
        for target in edge.targets:
            calls = _calls_per_run(nodes[target], config, 1)
            total, exact, bound = (
                total + tasks * calls.total,
                exact and calls.exact,
                bound and calls.bound,
            )
    for node in spec.nodes:
        if node.id not in fanned:
            calls = _calls_per_run(node, config, width)
            total, exact, bound = total + calls.total, exact and calls.exact, bound and calls.bound
    return CallEstimate(total, exact, bound)


def _may_stop_early(spec: GraphSpec, config: TMASConfig) -> bool:
    """Whether a run can end before ``max_iterations``: the consensus rule, or a loop that
    also stops on a condition other than ``run_finished``."""
    return config.stop_on_consensus or any(early_conditions(e.conditions) for e in spec.edges)


def estimate_run_calls(spec: GraphSpec, config: TMASConfig) -> CallEstimate:
    """The model calls of a whole run of ``spec`` at ``config``'s sizes.

    Each iteration's width comes from ``round_widths`` or N (and a planner's
    ``final_round_size``), its calls from :func:`iteration_calls`; a topology without a loop
    runs once; the consensus rule or a loop's own stop condition can end
    a run early (then the total is a bound).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> config = TMASConfig(n_candidates=4, n_verifications=2, max_iterations=3)
        >>> estimate_run_calls(load_bundled("tmas"), config).total
        72
        >>> str(estimate_run_calls(load_bundled("pacore"), config))
        '9'
        >>> str(estimate_run_calls(load_bundled("delm"), config))
        '<=26'
    """
    looped = any(edge.until for edge in spec.edges)
    final_round = _final_round_size(spec)
    total, exact, bound = 0, not _may_stop_early(spec, config), True
    for iteration in range(1, (config.max_iterations if looped else 1) + 1):
        calls = iteration_calls(spec, config, round_size(config, iteration, final_round))
        total, exact, bound = total + calls.total, exact and calls.exact, bound and calls.bound
    return CallEstimate(total, exact, bound)
