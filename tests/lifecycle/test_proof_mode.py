"""Proof mode on the scripted model: proof prompts, selection by verification score (not a
vote), grading by a rubric judge against a reference, a failing judge, bad input, and
``tmas eval --proof`` on the bundled proof sample."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from tmas.cli import app
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.manager import RunManager
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.nodes.control.proof_selection import best_verified
from tmas.storage import open_storage
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.scripted import ScriptedReplies

THEOREM = "Prove that the sum of two even integers is even."
REFERENCE = "Let a = 2m and b = 2n. Then a + b = 2(m + n), which is even."
CONFIG = TMASConfig(n_candidates=3, n_verifications=1, max_iterations=1, proof=True)


@dataclass(frozen=True)
class GradedProofs(ScriptedReplies):
    """Proofs whose checks score them by the step they use; a judge that may fail."""

    judge_fails: bool = False
    judge_fails_unless: str | None = None  # the judge fails on proofs without this text

    def reply(self, role, system, user, salt="", prompt=None):  # noqa: ANN001, ANN201
        if prompt == "verifier/proof_user":
            score = 9 if "Induct on n." in user else 4
            verdict = "correct" if score > 5 else "incorrect"
            return f"Checked.\nScore: {score}/10\nVerdict: {verdict}"
        if role == "proof_judge" and self.judge_fails:
            raise RuntimeError("judge server down")
        if role == "proof_judge" and self.judge_fails_unless is not None:
            if self.judge_fails_unless not in user:
                raise RuntimeError("judge server down")
        return super().reply(role, system, user, salt, prompt)


def run_proof(tmp_path: Path, replies: ScriptedReplies, reference: str | None) -> tuple:
    model = ScriptedChatModel(replies=replies)
    storage = open_storage(tmp_path / "runs.sqlite", for_writing=True)
    manager = RunManager(storage, router_factory=lambda plan: ModelRouter(model))
    try:
        outcome = manager.start(
            "p1",
            problem=THEOREM,
            gold_answer=reference,
            plan=plan_run(load_bundled("tmas"), CONFIG, BackendSpec()),
            show_progress=False,
        )
    finally:
        storage.close()
    return outcome.state, model


def test_the_best_verified_proof_is_the_result_and_the_judge_grades_it(tmp_path: Path) -> None:
    state, model = run_proof(tmp_path, GradedProofs(), REFERENCE)
    solver_prompts = {c.prompt for c in model.log if c.role == "solver"}
    assert solver_prompts == {"solver/proof_initial"}
    assert {c.prompt for c in model.log if c.role == "verifier"} == {"verifier/proof_user"}
    texts = [c["text"] for c in state["candidates"]]
    assert any("Induct on n." in t for t in texts) and any("Induct on n." not in t for t in texts)
    assert "Induct on n." in state["final_answer"]  # the best-scored proof, not a vote
    chosen = state["extras"]["proof_choice"]
    assert chosen["score"] == 0.9 and state["selection"] == "best_verified"
    record = state["history"][0]
    assert record["selected_answer"] == f"candidate {chosen['index']} of iteration 1"
    grade = state["extras"]["proof_grade"]
    assert len(grade["candidates"]) == 3 and grade["pass_at_1"] == 1.0 and grade["correct"]
    judge_calls = [c for c in model.log if c.role == "proof_judge"]
    assert len(judge_calls) == 3 and all(REFERENCE in c.user for c in judge_calls)
    assert state["usage"]["proof_judge"]["calls"] == 3  # the run's usage counts the judge


def test_without_a_reference_nothing_is_graded(tmp_path: Path) -> None:
    state, model = run_proof(tmp_path, GradedProofs(), None)
    assert state["final_answer"] and "proof_grade" not in state["extras"]
    assert not [c for c in model.log if c.role == "proof_judge"]


def test_a_failing_judge_leaves_the_grade_unknown_and_the_run_finished(tmp_path: Path) -> None:
    state, _ = run_proof(tmp_path, GradedProofs(judge_fails=True), REFERENCE)
    grade = state["extras"]["proof_grade"]
    assert state["stop_reason"] == "max_iterations"
    assert grade["correct"] is None and grade["pass_at_1_judged"] is None
    assert grade["pass_at_1"] == 0.0 and grade["judge_failures"] == 3  # as failed calls count
    assert all("judge server down" in g["error"] for g in grade["candidates"])
    assert state["usage"]["proof_judge"]["failed_calls"] == 3


def test_pass_at_1_counts_failed_judgements_in_its_denominator(tmp_path: Path) -> None:
    state, _ = run_proof(tmp_path, GradedProofs(judge_fails_unless="Induct on n."), REFERENCE)
    grade = state["extras"]["proof_grade"]
    judged = [g for g in grade["candidates"] if g["verdict"] != "unknown"]
    assert 0 < len(judged) < 3 and grade["judge_failures"] == 3 - len(judged)
    assert grade["pass_at_1"] == len(judged) / 3  # the judged ones pass, the others count as not
    assert grade["pass_at_1_judged"] == 1.0


def test_a_low_judge_score_grades_the_proof_incorrect(tmp_path: Path) -> None:
    state, _ = run_proof(tmp_path, GradedProofs(judge_score=3), REFERENCE)
    grade = state["extras"]["proof_grade"]
    assert grade["correct"] is False and grade["pass_at_1"] == 0.0


def test_proof_options_are_checked(tmp_path: Path) -> None:
    reference = tmp_path / "ref.txt"
    reference.write_text(REFERENCE)
    runner = CliRunner()
    base = ["solve", THEOREM, "--db", str(tmp_path / "runs.sqlite"), "--base-url",
            "http://127.0.0.1:9/v1", "--model", "m"]  # fmt: skip
    gold = runner.invoke(app, [*base, "--proof", "--gold", "4"])
    assert gold.exit_code == 2 and "no gold answer" in " ".join(gold.output.split())
    stray = runner.invoke(app, [*base, "--reference", str(reference)])
    assert stray.exit_code == 2 and "add --proof" in " ".join(stray.output.split())
    missing = runner.invoke(app, [*base, "--proof", "--reference", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "cannot read the reference proof" in missing.output
    assert not (tmp_path / "runs.sqlite").exists()  # nothing was saved


def test_eval_proof_grades_the_bundled_sample(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with FakeOpenAIServer() as server:
        result = CliRunner().invoke(app, [
            "eval", "--data", "proofs", "--limit", "2", "--proof", "--out", str(out),
            "--base-url", server.base_url, "--model", "scripted", "-n", "2", "-m", "1",
            "-t", "1", "--db", str(tmp_path / "runs.sqlite"), "--quiet",
        ])  # fmt: skip
        calls = server.request_count
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["correct"] and r["pass_at_1"] == [1.0] for r in rows)
    assert all(len(r["proof_grade"]["candidates"]) == 2 for r in rows)
    assert calls == 2 * (TMASConfig(n_candidates=2, n_verifications=1).calls_per_iteration() + 2)
    bad = CliRunner().invoke(app, ["eval", "--data", "gsm8k", "--limit", "1", "--proof",
                                   "--out", str(tmp_path / "o2")])  # fmt: skip
    assert bad.exit_code == 2 and "reference 'solution'" in " ".join(bad.output.split())


def test_the_judge_uses_the_runs_own_rubric(tmp_path: Path) -> None:

    spec = load_bundled("tmas").with_prompts(
        {"judge/proof_rubric": "MY RUBRIC for {problem} against {reference}: {proof}"}
    )
    model = ScriptedChatModel(replies=GradedProofs())
    storage = open_storage(tmp_path / "runs.sqlite", for_writing=True)
    try:
        RunManager(storage, router_factory=lambda plan: ModelRouter(model)).start(
            "p1",
            problem=THEOREM,
            gold_answer=REFERENCE,
            plan=plan_run(spec, CONFIG, BackendSpec()),
            show_progress=False,
        )
    finally:
        storage.close()
    judged = [c for c in model.log if c.role == "proof_judge"]
    assert judged and all(c.user.startswith("MY RUBRIC for Prove that") for c in judged)


def test_a_finished_proof_run_left_ungraded_is_graded_on_resume(tmp_path: Path) -> None:
    model = ScriptedChatModel(replies=GradedProofs())
    storage = open_storage(tmp_path / "runs.sqlite", for_writing=True)
    manager = RunManager(storage, router_factory=lambda plan: ModelRouter(model))
    try:  # as if the process died between the run's end and its grading
        manager.start(
            "p1",
            problem=THEOREM,
            gold_answer=None,
            plan=plan_run(load_bundled("tmas"), CONFIG, BackendSpec()),
            show_progress=False,
        )
        storage.registry.db.write("update tmas_runs set gold_answer=? where run_id=?",
                                  (REFERENCE, "p1"))  # fmt: skip
        graded = manager.resume("p1", show_progress=False).state
        again = manager.resume("p1", show_progress=False).state
    finally:
        storage.close()
    assert graded["extras"]["proof_grade"]["correct"] is True
    assert again["extras"]["proof_grade"] == graded["extras"]["proof_grade"]
    assert len([c for c in model.log if c.role == "proof_judge"]) == 3  # graded once


def test_unanimous_rejection_is_not_agreement_in_the_tie_break() -> None:
    state = {"iteration": 1, "verifications": [
        {"candidate_index": 0, "verdict": "incorrect"},
        {"candidate_index": 0, "verdict": "incorrect"},
        {"candidate_index": 1, "verdict": "correct"},
        {"candidate_index": 1, "verdict": "incorrect"}]}  # fmt: skip
    candidates = [{"index": 0, "text": "rejected twice"}, {"index": 1, "text": "accepted once"}]
    chosen = best_verified(state, candidates, [0.5, 0.5])  # equal scores: the tie-break decides
    assert chosen["index"] == 1 and chosen["acceptance"] == 0.5
