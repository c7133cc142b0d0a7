"""Answer selection: the verification-weighted vote, the iteration record and the stop rule."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from tmas.config import TMASConfig
from tmas.events import emit
from tmas.grading import pass_at_1
from tmas.nodes.summarizer import mean_score
from tmas.parsing import normalize_answer
from tmas.state import Candidate, IterationRecord, RunState, failed

NEUTRAL_SCORE = 0.5
MIN_WEIGHT = 1e-3
MAX_VOTE_ENTRIES = 64  # distinct answers kept in the running vote (the heaviest)


def tally(weighted_answers: Iterable[tuple[str | None, float]]) -> dict[str, float]:
    """Sum weights per distinct answer (grouped by normalized form, keyed by first spelling).

    Example:
        >>> tally([("18", 1.0), ("18.0", 0.5), ("7", 1.0), (None, 1.0)])
        {'18': 1.5, '7': 1.0}
    """
    totals: dict[str, float] = defaultdict(float)
    spelling: dict[str, str] = {}
    for answer, weight in weighted_answers:
        key = normalize_answer(answer)
        if key is None:
            continue
        spelling.setdefault(key, answer.strip())  # type: ignore[union-attr]
        totals[key] += weight
    return {spelling[k]: round(v, 6) for k, v in totals.items()}


def weighted_vote(answers: list[str | None], scores: list[float | None]) -> dict[str, float]:
    """Sum of verification scores per distinct answer (unscored candidates weigh 0.5).

    Example:
        >>> weighted_vote(["18", "18.0", "17", None], [0.9, 0.5, 1.0, 1.0])
        {'18': 1.4, '17': 1.0}
    """
    return tally(
        (answer, max(NEUTRAL_SCORE if score is None else score, MIN_WEIGHT))
        for answer, score in zip(answers, scores, strict=True)
    )


def winner(vote: dict[str, float]) -> str | None:
    """The answer with the largest weight (first seen wins ties).

    Example:
        >>> winner({"3": 1.0, "4": 2.0}), winner({})
        ('4', None)
    """
    return max(vote, key=vote.__getitem__) if vote else None


def add_vote(totals: dict[str, float], vote: dict[str, float]) -> dict[str, float]:
    """The running vote with one more iteration's vote added (the heaviest answers kept).

    Example:
        >>> add_vote({"18": 1.0}, {"18.0": 0.5, "7": 1.0})
        {'18': 1.5, '7': 1.0}
    """
    combined = tally([*totals.items(), *vote.items()])
    if len(combined) <= MAX_VOTE_ENTRIES:
        return combined
    kept = sorted(combined, key=combined.__getitem__, reverse=True)[:MAX_VOTE_ENTRIES]
    return {answer: combined[answer] for answer in combined if answer in kept}


def candidate_scores(state: RunState, candidates: list[Candidate]) -> list[float | None]:
    """Each candidate's mean verification score, in candidate order (failed checks and failed
    candidates have none).

    Example:
        >>> state = {"verifications": [
        ...     {"candidate_index": 0, "score": 0.8},
        ...     {"candidate_index": 0, "score": None, "error": "HTTP 500"}]}
        >>> candidate_scores(state, [{"index": 0}, {"index": 1, "error": "timeout"}])
        [0.8, None]
    """
    by_index: dict[int, list[float | None]] = defaultdict(list)
    for verification in state.get("verifications", []):
        if not failed(verification):
            by_index[verification["candidate_index"]].append(verification["score"])
    return [None if failed(c) else mean_score(by_index[c["index"]]) for c in candidates]


def voted(candidates: list[Candidate], scores: list[float | None]) -> dict[str, float]:
    """The weighted vote of the candidates whose solver call did not fail.

    Example:
        >>> voted([{"answer": "3"}, {"answer": None, "error": "timeout"}], [0.9, None])
        {'3': 0.9}
    """
    live = [(c["answer"], s) for c, s in zip(candidates, scores, strict=True) if not failed(c)]
    return weighted_vote([a for a, _ in live], [s for _, s in live])


class RecordIteration:
    """Node: vote, grade (when a gold answer is known), record the iteration, pick the answer.

    A candidate whose solver call failed stays in the record (no answer, no score) but takes no
    part in the vote, Pass@1 or the consensus rule.
    """

    def __init__(self, config: TMASConfig) -> None:
        self.config = config

    def __call__(self, state: RunState) -> dict[str, Any]:
        candidates = sorted(state.get("candidates", []), key=lambda c: c["index"])
        answers = [c["answer"] for c in candidates]
        scores = candidate_scores(state, candidates)
        vote = voted(candidates, scores)
        live_answers = [c["answer"] for c in candidates if not failed(c)]
        growth = state.get("bank_growth", {})
        record: IterationRecord = {
            "iteration": state["iteration"],
            "answers": answers,
            "modes": [c["mode"] for c in candidates],
            "scores": scores,
            "vote": vote,
            "voted_answer": winner(vote),
            "mean_score": mean_score(scores),
            "pass_at_1": pass_at_1(live_answers, state.get("gold_answer")),
            "experiences_added": growth.get("experiences", 0),
            "guidelines_added": growth.get("guidelines", 0),
        }
        history = [*state.get("history", []), record][-self.config.history_window :]
        totals = state.get("vote_totals")
        if totals is None:  # saved before running totals were kept: its history is complete
            totals = tally(pair for old in state.get("history", []) for pair in old["vote"].items())
        totals = add_vote(totals, vote)
        final_vote = totals if self.config.vote_scope == "all" else vote
        emit(
            "iteration",
            iteration=record["iteration"],
            voted_answer=record["voted_answer"],
            vote=vote,
            final_answer=winner(final_vote),
        )
        return {
            "history": history,
            "vote_totals": totals,
            "final_answer": winner(final_vote),
            "stop_reason": self.stop_reason(record, live_answers),
        }

    def stop_reason(self, record: IterationRecord, answers: list[str | None]) -> str | None:
        """Why the run ends after this iteration, or None to go on."""
        if record["iteration"] >= self.config.max_iterations:
            return "max_iterations"
        keys = {normalize_answer(a) for a in answers}
        agreed = len(keys) == 1 and None not in keys
        if self.config.stop_on_consensus and agreed and (record["mean_score"] or 0) >= 0.7:
            return "consensus"
        return None
