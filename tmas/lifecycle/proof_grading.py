"""Grading a finished proof run: a rubric judge (the ``proof_judge`` role: the verifier's model
unless ``--role-model proof_judge=...`` gives it its own; prompt ``judge/proof_rubric``) scores
each candidate of the last iteration against the run's reference proof. Pass@1 is the share of
the candidates judged correct, over every candidate: a judgement that failed counts as not
passed, as a failed solver call does in numeric mode; ``pass_at_1_judged`` leaves out both
(failed judgements and candidates without a proof, like ``pass_at_1_answered``), and
``judge_failures`` counts the failed judgements, the chosen proof's own included. The run's
grade is the chosen proof's. A judge call that fails leaves that grade unknown and says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tmas.answers.parsing import parse_verification
from tmas.config import TMASConfig
from tmas.llm.router import ModelCall, ModelRouter
from tmas.nodes.prompts import PromptSet
from tmas.seeding import derive_seed
from tmas.state import failed

JUDGE_ROLE = "proof_judge"


def judge_call(
    config: TMASConfig,
    problem: str,
    reference: str,
    proof: str,
    index: int,
    prompts: PromptSet | None = None,
    max_tokens: int = 512,
) -> ModelCall:
    """The judge's call for one proof (its template from the run's ``prompts``, its answer
    budget the ``proof_judge`` role's binding's).

    Example:
        >>> call = judge_call(TMASConfig(), "1 is odd", "1 = 2*0 + 1.", "Trivially.", 0)
        >>> call.role, call.prompt, "Trivially." in call.user, call.max_tokens
        ('proof_judge', 'judge/proof_rubric', True, 512)
    """
    return ModelCall(
        JUDGE_ROLE,
        "You are a strict grader of mathematical proofs.",
        (prompts or PromptSet()).render(
            "judge/proof_rubric", problem=problem, reference=reference, proof=proof
        ),
        max_tokens,
        derive_seed(config.seed, "judge", index),
        prompt="judge/proof_rubric",
    )


def grade_one(router: ModelRouter, call: ModelCall) -> dict[str, Any]:
    """The judge's grade of one proof: verdict, score (0..1), its report and the call's
    tokens, or the error."""
    try:
        reply = router.call(call)
    except Exception as exc:  # noqa: BLE001 - a failed judge leaves the grade unknown
        return {"verdict": "unknown", "score": None, "error": f"{type(exc).__name__}: {exc}",
                "usage": {"calls": 0, "input_tokens": 0, "output_tokens": 0,
                          "failed_calls": 1}}  # fmt: skip
    verdict, score = parse_verification(reply.text).value  # type: ignore[misc]
    usage = reply.usage(call.role)[call.role]
    return {"verdict": verdict, "score": score, "text": reply.text, "usage": usage}


def judge_usage(grade: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """The judge calls of a grade as a ``usage`` update (so a run's usage counts them).

    Example:
        >>> judge_usage({"candidates": [{"usage": {"calls": 1, "input_tokens": 5,
        ...     "output_tokens": 2}}], "final": None})
        {'proof_judge': {'calls': 1, 'input_tokens': 5, 'output_tokens': 2}}
    """
    total: dict[str, int] = {}
    final = grade.get("final")
    graded = list(grade.get("candidates") or [])
    if final is not None and final not in graded:
        graded.append(final)
    for one in graded:
        for key, value in (one.get("usage") or {}).items():
            total[key] = total.get(key, 0) + value
    return {"proof_judge": total} if total else {}


def grade_proof_run(
    router: ModelRouter,
    config: TMASConfig,
    state: Mapping[str, Any],
    reference: str,
    prompts: PromptSet | None = None,
) -> dict[str, Any]:
    """The ``proof_grade`` a finished proof run records: each last-iteration candidate's grade,
    Pass@1 over all of them (a failed judgement counts as not passed), Pass@1 over those
    judged (None when no judgement succeeded), the failed judgements and the chosen proof's
    grade."""
    chosen = (state.get("extras") or {}).get("proof_choice")
    budget = router.binding(JUDGE_ROLE).max_tokens
    candidates = sorted(state.get("candidates") or [], key=lambda c: c["index"])
    grades = []
    for candidate in candidates:
        if failed(candidate) or not candidate.get("text", "").strip():
            grades.append({"index": candidate["index"], "verdict": "incorrect", "score": 0.0,
                           "no_proof": True})  # fmt: skip
            continue
        index = candidate["index"]
        call = judge_call(config, state["problem"], reference, candidate["text"], index, prompts,
                          budget)  # fmt: skip
        grades.append({"index": candidate["index"], **grade_one(router, call)})
    judged = [g for g in grades if g["verdict"] != "unknown" and not g.get("no_proof")]
    passed = sum(g["verdict"] == "correct" for g in judged)
    failures = sum(g["verdict"] == "unknown" for g in grades)
    final = None
    if chosen is not None:
        same = [
            g for g in grades
            if chosen["iteration"] == state.get("iteration") and g["index"] == chosen["index"]
        ]  # fmt: skip
        final = same[0] if same else {
            "index": chosen["index"],
            **grade_one(router, judge_call(config, state["problem"], reference,
                                           chosen["text"], -1, prompts, budget)),
        }  # fmt: skip
    return {"candidates": grades, "pass_at_1": passed / len(grades) if grades else None,
            "pass_at_1_judged": passed / len(judged) if judged else None,
            "judge_failures": failures + (final is not None and final not in grades
                                          and final["verdict"] == "unknown"),
            "final": final,
            "correct": None if final is None or final["verdict"] == "unknown"
            else final["verdict"] == "correct"}  # fmt: skip
