"""Choosing a proof: there is no answer to vote on, so the result is the best-verified
candidate (highest mean verification score, ties broken by the share of its checks that accept
it, then by the lower index), kept across iterations: a later iteration replaces it only with a
better one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tmas.state import failed

PROOF_SELECTION = "best_verified"


def check_acceptance(verdicts: Sequence[str]) -> float | None:
    """The share of a candidate's checks that accept it (checks that reached no verdict left
    out): unanimous acceptance is 1, unanimous rejection 0, never full agreement.

    Example:
        >>> check_acceptance(["correct", "correct", "incorrect", "unknown"])
        0.6666666666666666
        >>> check_acceptance(["incorrect", "incorrect"]), check_acceptance(["unknown"]) is None
        (0.0, True)
    """
    known = [v for v in verdicts if v in ("correct", "incorrect")]
    if not known:
        return None
    return known.count("correct") / len(known)


def _rank(choice: Mapping[str, Any]) -> tuple[float, float, int, int]:
    score = choice["score"] if choice["score"] is not None else -1.0
    acceptance = choice.get("acceptance") or 0.0
    return score, acceptance, choice["iteration"], -choice["index"]


def best_verified(
    state: Mapping[str, Any],
    candidates: Sequence[Mapping[str, Any]],
    scores: Sequence[float | None],
) -> dict[str, Any] | None:
    """The best-verified candidate of this iteration (None when every solver call failed).

    Example:
        >>> best_verified({"iteration": 1, "verifications": [
        ...     {"candidate_index": 0, "verdict": "correct"},
        ...     {"candidate_index": 0, "verdict": "incorrect"},
        ...     {"candidate_index": 1, "verdict": "correct"},
        ...     {"candidate_index": 1, "verdict": "correct"}]},
        ...     [{"index": 0, "text": "a"}, {"index": 1, "text": "b"}], [0.5, 0.5])["index"]
        1
    """
    verdicts: dict[int, list[str]] = {}
    for check in state.get("verifications") or []:
        verdicts.setdefault(check["candidate_index"], []).append(check["verdict"])
    choices = [
        {
            "iteration": state["iteration"],
            "index": candidate["index"],
            "score": score,
            "acceptance": check_acceptance(verdicts.get(candidate["index"], [])),
            "text": candidate["text"],
        }
        for candidate, score in zip(candidates, scores, strict=True)
        if not failed(candidate) and candidate.get("text", "").strip()
    ]
    return max(choices, key=_rank) if choices else None


def keep_better(new: dict[str, Any] | None, kept: dict[str, Any] | None) -> dict[str, Any] | None:
    """The better of this iteration's best and the one kept so far (a tie keeps the newer).

    Example:
        >>> old = {"iteration": 1, "index": 0, "score": 0.9, "acceptance": 1.0, "text": "a"}
        >>> new = {"iteration": 2, "index": 0, "score": 0.7, "acceptance": 1.0, "text": "b"}
        >>> keep_better(new, old)["text"]
        'a'
    """
    if new is None or kept is None:
        return new or kept
    return new if _rank(new)[:2] >= _rank(kept)[:2] else kept


def describe_choice(choice: Mapping[str, Any] | None) -> str | None:
    """How the record names the chosen proof.

    Example:
        >>> describe_choice({"iteration": 2, "index": 1})
        'candidate 1 of iteration 2'
    """
    if choice is None:
        return None
    return f"candidate {choice['index']} of iteration {choice['iteration']}"
