"""Shared sizes and helpers of the bundled-topology tests."""

from __future__ import annotations

from typing import Any

from tmas.api import build_graph
from tmas.config import TMASConfig
from tmas.graphs.spec import GraphSpec
from tmas.llm.router import ModelRouter
from tmas.roles import Role
from tmas.testing.fake_chat import ScriptedChatModel

PROBLEM = "What is 9 + 9?"
N, M, T = 3, 2, 3
SMALL: dict[str, Any] = {
    "n_candidates": N,
    "n_verifications": M,
    "max_iterations": T,
    "max_retries": 0,
    "seed": 7,
}

ISSUE_TOPOLOGIES = {
    "tmas",
    "majority_vote",
    "self_refine",
    "verify_refine",
    "pacore",
    "rsa",
    "rse",
    "tmas_no_experience",
    "tmas_no_guideline",
}


def config_for(spec: GraphSpec, **overrides: Any) -> TMASConfig:
    """Small sizes, then the topology's own defaults, then the test's overrides."""
    return TMASConfig(**{**SMALL, **spec.config, **overrides})


def expected_calls(name: str, n: int, m: int, t: int) -> dict[Role, int]:
    """LLM calls per role one run of ``name`` makes (``m`` and ``t`` as configured)."""
    tmas_like = {"solver": n * t, "verifier": n * m * t, "summary": n * t}
    table: dict[str, dict[Role, int]] = {
        "majority_vote": {"solver": n * t},
        "self_refine": {"solver": n * t, "critic": n * m * t},
        "verify_refine": {"solver": n * t, "verifier": n * m * t},
        "pacore": {"solver": n * (t - 1) + 1},
        "rsa": {"solver": n * t},
        "rse": {**tmas_like, "experience": n * t},
        "tmas": {**tmas_like, "experience": n * t, "guideline": n * t},
        "tmas_barrier": {**tmas_like, "experience": n * t, "guideline": n * t},
        "tmas_no_experience": {**tmas_like, "guideline": n * t},
        "tmas_no_guideline": {**tmas_like, "experience": n * t},
        "text_mas": {"planner": t, "critic": t, "refiner": t, "judger": n * t},
    }
    return table[name]


ANSWER_ROLE: dict[str, Role] = {"text_mas": "judger"}
"""The role whose calls write the candidates, where it is not the solver."""


def run(spec: GraphSpec, config: TMASConfig, model: ScriptedChatModel, **router: Any) -> dict:
    graph = build_graph(spec, llm=ModelRouter(model, **router), config=config)
    return graph.invoke({"problem": PROBLEM})
