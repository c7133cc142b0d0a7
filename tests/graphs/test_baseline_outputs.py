"""Each bundled baseline returns its own method's output (PaCoRe's last-round sample, RSA's final
population, the last refinements), takes its own settings (round widths, truncation lengths),
links candidates by stable ids, and counts failed calls in Pass@1."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from pydantic import PrivateAttr
from test_round_context import MarkedReplies, headers, solver_calls
from topology_helpers import N, config_for, run

from tmas.api import build_graph
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.llm.router import ModelRouter
from tmas.nodes.agents.solver import solver_tasks
from tmas.nodes.control.iteration import StartIteration
from tmas.nodes.tasks import TaskRequest
from tmas.roles import Role
from tmas.seeding import derive_seed
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies


class LastRoundDiffers(ScriptedReplies):
    """Solver calls answer 17 until the last round, whose calls answer 18 (rounds run one
    after another, so the call number tells the round)."""

    def __init__(self, calls_before_last_round: int) -> None:
        super().__init__()
        object.__setattr__(self, "before_last", calls_before_last_round)
        object.__setattr__(self, "lock", threading.Lock())
        object.__setattr__(self, "seen", [0])

    def reply(
        self, role: Role | None, system: str, user: str, salt: str = "", prompt: str | None = None
    ) -> str:
        if role != "solver":
            return super().reply(role, system, user, salt, prompt)
        with self.lock:  # type: ignore[attr-defined]
            self.seen[0] += 1  # type: ignore[attr-defined]
            number = self.seen[0]  # type: ignore[attr-defined]
        answer = "17" if number <= self.before_last else "18"  # type: ignore[attr-defined]
        return f"Step by step.\n\\boxed{{{answer}}}"


# (topology, solver calls before its last round) at N=3, T=3
LAST_ROUND = {"pacore": 2 * N, "rsa": 2 * N, "self_refine": 2 * N, "verify_refine": 2 * N}


@pytest.mark.parametrize("name", sorted(LAST_ROUND))
def test_baseline_answers_with_its_last_round(name: str) -> None:
    spec = load_bundled(name)
    state = run(
        spec, config_for(spec), ScriptedChatModel(replies=LastRoundDiffers(LAST_ROUND[name]))
    )
    earlier = [a for record in state["history"][:-1] for a in record["answers"]]
    assert set(earlier) == {"17"} and set(state["history"][-1]["answers"]) == {"18"}
    assert state["final_answer"] == "18"
    assert state["selection"] == "majority_last"
    assert state["history"][-1]["selected_answer"] == "18"


@pytest.mark.parametrize("name", sorted(LAST_ROUND))
def test_the_all_rounds_vote_stays_a_setting(name: str) -> None:
    spec = load_bundled(name)
    model = ScriptedChatModel(replies=LastRoundDiffers(LAST_ROUND[name]))
    state = run(spec, config_for(spec, selection="vote_all"), model)
    assert state["final_answer"] == "17"  # more votes over every round
    assert state["selection"] == "vote_all"


def test_tmas_keeps_its_vote_over_every_iteration() -> None:
    spec = load_bundled("tmas")
    state = run(spec, config_for(spec), ScriptedChatModel(replies=LastRoundDiffers(2 * N)))
    assert (state["final_answer"], state["selection"]) == ("17", "vote_all")
    older = run(
        spec,
        config_for(spec, vote_scope="last"),
        ScriptedChatModel(replies=LastRoundDiffers(2 * N)),
    )
    assert (older["final_answer"], older["selection"]) == ("18", "vote_last")


def test_an_unknown_selection_rule_is_refused_with_the_known_ones() -> None:
    spec = load_bundled("pacore")
    with pytest.raises(ValueError, match="unknown selection rule 'best'; known: .*majority_last"):
        run(spec, config_for(spec, selection="best"), ScriptedChatModel())


def test_pacore_rounds_are_a_list_of_widths() -> None:
    spec = load_bundled("pacore")
    config = config_for(spec, round_widths=[5, 2, 1], max_iterations=3)
    model = ScriptedChatModel(replies=MarkedReplies())
    state = run(spec, config, model)
    assert [len(record["answers"]) for record in state["history"]] == [5, 2, 1]
    last = [c for c in model.log if c.role == "solver"][-1]
    assert [k for k, _ in headers(last.user)] == [1, 2]  # reads the 2 of the round before


def test_reference_length_is_a_setting() -> None:
    spec = load_bundled("pacore")
    for limit in (60, 700):
        config = config_for(spec, reference_chars=limit)
        model = ScriptedChatModel(replies=MarkedReplies())
        run(spec, config, model)
        prompt = [c for c in model.log if c.role == "solver"][-1].user
        bodies = re.split(r"^Solution \d+ \(answer: [^)]*\):\n", prompt, flags=re.M)[1:]
        texts = [body.split("\n\n")[0] for body in bodies]
        assert texts and all(len(text) <= limit for text in texts)
        assert any(len(text) > 60 for text in texts) == (limit > 60)


class FailingSeed(ScriptedChatModel):
    """Fails the solver call whose seed is ``failing_seed``."""

    failing_seed: int = -1
    _failed: list[int] = PrivateAttr(default_factory=list)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any):
        if kwargs.get("seed") == self.failing_seed and not self._failed:
            self._failed.append(1)
            raise ValueError("bad request")  # not transient: fails for good at once
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_parent_links_survive_a_failed_call() -> None:
    spec = load_bundled("verify_refine")
    config = config_for(spec, max_iterations=2)
    failing = derive_seed(config.seed, "solve", 1, 1)
    model = FailingSeed(replies=MarkedReplies(), failing_seed=failing)
    state = run(spec, config, model)
    calls = solver_calls(model, config)
    rollouts = {index: calls[(1, index)] for index in (0, 2)}  # candidate 1's call failed
    candidates = {c["index"]: c for c in state["candidates"]}
    for index in range(N):
        parent = candidates[index]["parent_index"]
        assert parent in rollouts, parent  # never the failed candidate
        marker = re.match(r"Attempt (\d+)\.", rollouts[parent].reply)
        assert marker and f"Attempt {marker.group(1)}." in calls[(2, index)].user
    assert [candidates[i]["parent_index"] for i in range(N)] == [0, 2, 2]
    assert state["history"][0]["failed_candidates"] == 1


def test_pass_at_1_counts_a_failed_call_as_wrong() -> None:
    spec = load_bundled("majority_vote")
    config = config_for(spec)
    model = FailingSeed(
        replies=ScriptedReplies(answers=("18",)),
        failing_seed=derive_seed(config.seed, "solve", 1, 1),
    )
    graph = build_graph(spec, llm=ModelRouter(model), config=config)
    state = graph.invoke({"problem": "What is 9 + 9?", "gold_answer": "18"})
    record = state["history"][0]
    assert record["answers"].count(None) == 1
    assert record["pass_at_1"] == pytest.approx((N - 1) / N)
    assert record["pass_at_1_answered"] == 1.0


def test_references_may_be_longer_than_repair_prompts() -> None:
    config = TMASConfig(n_candidates=1, reference_chars=3000, rollout_chars_in_prompt=500)
    state = {
        "problem": "p",
        "iteration": 1,
        "candidates": [{"index": 0, "text": "x" * 5000, "answer": "1"}],
        "summaries": [],
    }
    update = StartIteration(config, "references")(state)  # retires iteration 1's rollout
    retired = {**state, **update}
    (task,) = solver_tasks(TaskRequest(retired, config))
    assert len(task["references"][0]["text"]) == 3000
    (repair,) = solver_tasks(
        TaskRequest({**retired, "plans": StartIteration(config, "refine")(state)["plans"]}, config)
    )
    assert len(repair["parent"]["text"]) == 500
