"""The public plugin API: everything a plugin module needs, from one import.

A plugin registers node types, task builders, roles, prompts, planners, selection rules, stop
conditions, similarities and state channels, then a topology spec (YAML) uses them by name::

    from tmas.plugin import register_node

    @register_node("shout", role="solver")
    def make_shout(ctx, suffix: str = "!"):
        return lambda state: {"final_answer": (state.get("final_answer") or "") + suffix}

A node factory gets a :class:`NodeContext`: ``ctx.complete(fields)`` (or ``ctx.ask`` in a
:class:`SteppedAgent`) makes the node's model call with its role's model, budget and
templates, and ``ctx.usage(reply)`` counts it under that role.

Load it with ``tmas solve --plugin my_module`` (or ``--plugin ./my_module.py``). The names
exported here keep working across releases; every other module of the package is internal
and may change without notice (``docs/extending.md``).
"""

from __future__ import annotations

from tmas.answers.parsing import (
    Parsed,
    extract_answer,
    normalize_answer,
    parse_bullets,
    parse_strategy,
    parse_verification,
)
from tmas.graphs.registry import (
    NodeContext,
    PlanChoice,
    PlanRequest,
    SelectionRequest,
    TaskRequest,
    load_plugin,
    register_channel,
    register_node,
    register_planner,
    register_prompts,
    register_role,
    register_selection,
    register_stop,
    register_tasks,
)
from tmas.llm.calls import Completion, ModelCall
from tmas.memory.similarity import register_similarity
from tmas.nodes.common import SteppedAgent, Steps, agent_update, answer_update, live_candidates
from tmas.nodes.events import emit
from tmas.nodes.prompts import bullet_list, clip, prompt_fields
from tmas.seeding import derive_seed, draw_uniform
from tmas.state import RESET, Candidate, RunState, Summary, Verification, failed

__all__ = [
    "RESET",
    "Candidate",
    "Completion",
    "ModelCall",
    "NodeContext",
    "Parsed",
    "PlanChoice",
    "PlanRequest",
    "SelectionRequest",
    "TaskRequest",
    "RunState",
    "SteppedAgent",
    "Steps",
    "Summary",
    "Verification",
    "agent_update",
    "answer_update",
    "bullet_list",
    "clip",
    "derive_seed",
    "draw_uniform",
    "emit",
    "extract_answer",
    "failed",
    "live_candidates",
    "load_plugin",
    "normalize_answer",
    "parse_bullets",
    "parse_strategy",
    "parse_verification",
    "prompt_fields",
    "register_channel",
    "register_node",
    "register_planner",
    "register_prompts",
    "register_role",
    "register_selection",
    "register_similarity",
    "register_stop",
    "register_tasks",
]
