"""Closing an iteration: scores, votes, Pass@1, the iteration record, the final answer (by the
topology's selection rule) and the stop rule."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from tmas.answers.grading import pass_at_1
from tmas.config import TMASConfig
from tmas.nodes.channels import ChannelSpec, channel_values
from tmas.nodes.control.proof_selection import (
    PROOF_SELECTION,
    best_verified,
    describe_choice,
    keep_better,
)
from tmas.nodes.control.selection_rules import (
    DEFAULT_SELECTION,
    SelectionRequest,
    selection_rule,
)
from tmas.nodes.control.stop_rules import consensus
from tmas.nodes.control.voting import add_vote, mean_score, tally, weighted_vote, winner
from tmas.nodes.events import emit
from tmas.state import Candidate, IterationRecord, RunState, failed, windowed_diagnostics


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

    The final answer comes from the selection rule ``config.selection`` names, else the
    topology's own ``selection`` (see :mod:`tmas.nodes.control.selection_rules`); the state records
    which rule produced it. A candidate whose solver call failed stays in the record (no
    answer, no score) and counts as wrong in ``pass_at_1``; ``pass_at_1_answered`` leaves it
    out. It takes no part in the vote or the consensus rule.

    Example:
        >>> node = RecordIteration(TMASConfig(max_iterations=1), selection="majority_last")
        >>> update = node({"iteration": 1, "gold_answer": "3", "candidates": [
        ...     {"index": 0, "answer": "3", "mode": "initial"},
        ...     {"index": 1, "answer": None, "mode": "initial", "error": "HTTP 500"}]})
        >>> update["final_answer"], update["selection"], update["history"][0]["pass_at_1"]
        ('3', 'majority_last', 0.5)
    """

    def __init__(
        self,
        config: TMASConfig,
        selection: str = DEFAULT_SELECTION,
        channels: Mapping[str, ChannelSpec] | None = None,
    ) -> None:
        self.config = config
        self.selection = config.selection or selection
        self.rule = selection_rule(self.selection)  # rejects an unknown rule now
        self.channels = dict(channels or {})

    # typed as a plain dict: LangGraph would hand a RunState-typed node RunState's keys only
    def __call__(self, state: dict[str, Any]) -> dict[str, Any]:
        candidates = sorted(state.get("candidates", []), key=lambda c: c["index"])
        answers = [c["answer"] for c in candidates]
        scores = candidate_scores(state, candidates)
        vote = voted(candidates, scores)
        live_answers = [c["answer"] for c in candidates if not failed(c)]
        growth = state.get("bank_growth", {})
        gold = state.get("gold_answer")
        record: IterationRecord = {
            "iteration": state["iteration"],
            "answers": answers,
            "modes": [c["mode"] for c in candidates],
            "scores": scores,
            "vote": vote,
            "voted_answer": winner(vote),
            "mean_score": mean_score(scores),
            "pass_at_1": pass_at_1(answers, gold),
            "pass_at_1_answered": pass_at_1(live_answers, gold),
            "failed_candidates": len(answers) - len(live_answers),
            "experiences_added": growth.get("experiences", 0),
            "guidelines_added": growth.get("guidelines", 0),
        }
        totals = state.get("vote_totals")
        if totals is None:  # saved before running totals were kept: its history is complete
            totals = tally(pair for old in state.get("history", []) for pair in old["vote"].items())
        totals = add_vote(totals, vote)
        proof: dict[str, Any] = {}
        if self.config.proof:  # no answers: the best-verified proof so far is the result
            record["pass_at_1"] = record["pass_at_1_answered"] = None  # a judge grades proofs
            kept = (state.get("extras") or {}).get("proof_choice")
            chosen = keep_better(best_verified(state, candidates, scores), kept)
            proof = {"extras": {"proof_choice": chosen}}
            final_answer = chosen["text"] if chosen else None
            record["selected_answer"] = describe_choice(chosen)
        else:
            values = channel_values(state, self.channels)
            final_answer = self.rule(SelectionRequest(record, totals, values))
            record["selected_answer"] = final_answer
        history = [*state.get("history", []), record][-self.config.history_window :]
        emit(
            "iteration",
            iteration=record["iteration"],
            voted_answer=record["voted_answer"],
            vote=vote,
            final_answer=final_answer,
            selection=self.selection,
        )
        return {
            "history": history,
            "vote_totals": totals,
            "final_answer": final_answer,
            "selection": PROOF_SELECTION if self.config.proof else self.selection,
            **proof,
            "stop_reason": self.stop_reason(record, state),
            **windowed_diagnostics(state, record["iteration"], self.config.history_window),
        }

    def stop_reason(self, record: IterationRecord, state: RunState) -> str | None:
        """Why the run ends after this iteration (``max_iterations``, or ``consensus`` when
        ``stop_on_consensus`` is set and the stop condition of that name holds), or None."""
        if record["iteration"] >= self.config.max_iterations:
            return "max_iterations"
        if self.config.stop_on_consensus and consensus({**state, "history": [record]}):
            return "consensus"
        return None
