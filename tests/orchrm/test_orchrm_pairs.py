"""OrchRM labels that mean something: pairs from several runs per (problem, plan) only where
success rates differ by a margin, problems split into training and held-out ones before any
pair is made, inputs that never cut the plan (the same rule in training and scoring), and
exact ties that the earlier plan no longer wins by default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tmas.cli.app import app
from tmas.eval.identity import evaluation_identity
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.llm.backend import BackendSpec
from tmas.orchrm.baselines import (
    FamilyPlanModel,
    PlanFeatureModel,
    PlanPrior,
    leave_one_problem_out,
)
from tmas.orchrm.choice import PlanChooser
from tmas.orchrm.pairs import (
    CORRECT_OVER_INCORRECT,
    Outcome,
    PairsError,
    build_pairs,
    problem_pairs,
)
from tmas.orchrm.plan_space import plan_space_from_data
from tmas.orchrm.plans import make_plan
from tmas.orchrm.reward_model import RM_RECORD, RewardModelError, fitted_problem, render_input

COT = make_plan("cot", load_bundled("majority_vote"), {"n_candidates": 1})
VOTE = make_plan("vote3", load_bundled("majority_vote"), {"n_candidates": 3})


def runs(plan, rights: list[bool], tokens: int = 100) -> list[Outcome]:  # noqa: ANN001
    return [Outcome("p", "What is 2 + 3?", "5", plan, right, tokens, f"s{i}")
            for i, right in enumerate(rights)]  # fmt: skip


def test_a_pair_needs_success_rates_apart_by_the_margin_not_one_coin_flip() -> None:
    close = runs(COT, [True, True, False]) + runs(VOTE, [True, False, False])
    assert problem_pairs(close) == []  # 2/3 against 1/3: within the margin, no label
    apart = runs(COT, [True, True, True]) + runs(VOTE, [True, False, False])
    [pair] = problem_pairs(apart)  # one pair per problem and plan pair, not per run
    assert pair["chosen_plan"] == "cot" and pair["source"] == CORRECT_OVER_INCORRECT
    assert (pair["chosen_runs"], pair["chosen_successes"]) == (3, 3)
    assert (pair["rejected_runs"], pair["rejected_successes"]) == (3, 1)
    assert problem_pairs(apart, success_margin=0.9) == []
    single = runs(COT, [True]) + runs(VOTE, [False])  # one run each: right beats wrong
    assert [p["chosen_plan"] for p in problem_pairs(single)] == ["cot"]


def test_of_two_plans_right_as_often_the_cheaper_wins_only_when_asked() -> None:
    both = runs(COT, [True, True], tokens=100) + runs(VOTE, [True, True], tokens=400)
    assert problem_pairs(both) == []
    [pair] = problem_pairs(both, cheaper=True)
    assert pair["chosen_plan"] == "cot" and pair["source"] == "cheaper-over-costlier"


def write_evaluation(folder: Path, plan, problems: list[dict], solved) -> Path:  # noqa: ANN001
    """An evaluation folder as ``tmas eval`` writes it, with results decided by ``solved``."""
    folder.mkdir(parents=True)
    backend = BackendSpec(kind="openai", base_url="http://127.0.0.1:1/v1", model="scripted")
    identity = evaluation_identity(plan_run(plan.spec, plan.config, backend))
    (folder / "identity.json").write_text(json.dumps(identity))
    rows = [{**p, "gold": p["answer"], "status": "finished", "correct": solved(i),
             "tokens_in": 100, "tokens_out": 50, "run_id": f"{folder.name}-{p['id']}"}
            for i, p in enumerate(problems)]  # fmt: skip
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def repeated_evaluations(root: Path) -> list[Path]:
    """Three runs (seeds) of each plan on 12 problems: ``cot`` solves the even ones always,
    ``vote3`` the odd ones always; on problems 0-3 the seeds disagree (coin flips)."""
    problems = [{"id": f"q{i}", "problem": f"What is {i} + 7?", "answer": str(i + 7)}
                for i in range(12)]  # fmt: skip
    folders = []
    for seed in range(3):
        for plan, parity in ((COT, 0), (VOTE, 1)):

            def solved(i: int, parity=parity, seed=seed) -> bool:  # noqa: ANN001
                return (i + seed) % 2 == parity if i < 4 else i % 2 == parity

            folders.append(write_evaluation(root / f"{plan.name}-s{seed}", plan, problems, solved))
    return folders


def test_pairs_come_from_repeats_and_held_out_problems_are_split_first(tmp_path: Path) -> None:
    folders = repeated_evaluations(tmp_path)
    found = build_pairs(folders, held_out=0.25, seed=0)
    report = found.report
    assert report["plans"] == 2 and report["runs_per_plan_and_problem"] == {"3": 24}
    assert report["held_out_problems"] == 3
    train_ids = {p["problem_id"] for p in found.train}
    held_ids = {p["problem_id"] for p in found.held_out}
    assert not train_ids & held_ids and len(train_ids | held_ids) <= 8
    # problems 0-3 were coin flips over the seeds (2/3 against 1/3): no pair from them
    assert not (train_ids | held_ids) & {"q0", "q1", "q2", "q3"}
    for pair in found.train + found.held_out:
        number = int(pair["problem_id"][1:])
        assert pair["chosen_plan"].startswith("cot" if number % 2 == 0 else "vote3")  # 1st folder
        assert pair["chosen_successes"] == 3 and pair["rejected_successes"] == 0
    out = tmp_path / "pairs.jsonl"
    result = CliRunner().invoke(app, ["orchrm", "pairs", *map(str, folders), "--out", str(out),
                                      "--held-out", "0.25"])  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    held_lines = (tmp_path / "pairs.held_out.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == found.train
    assert [json.loads(line) for line in held_lines] == found.held_out
    shown = json.loads(result.stdout)
    assert shown["held_out_problems"] == 3 and shown["success_margin"] == 0.5


def test_evaluations_of_one_plan_alone_make_no_pairs(tmp_path: Path) -> None:
    folders = [f for f in repeated_evaluations(tmp_path) if f.name.startswith("cot")]
    result = CliRunner().invoke(app, ["orchrm", "pairs", *map(str, folders), "--out",
                                      str(tmp_path / "p.jsonl")])  # fmt: skip
    assert result.exit_code == 2 and "all of one plan" in result.output


@pytest.fixture(scope="module")
def tokenizer():  # noqa: ANN201
    from transformers import AutoTokenizer

    from tmas.llm.checkpoints import checkpoint_for

    return AutoTokenizer.from_pretrained(checkpoint_for("smollm2"))


def test_a_long_problem_is_shortened_in_the_middle_and_the_plan_is_never_cut(tokenizer) -> None:  # noqa: ANN001
    start, end = "Start: Tom has 3 apples.", "Question: how many apples are left at the end?"
    problem = start + " " + "He walks to the market and back. " * 200 + end
    plans = [COT.text, VOTE.text]
    shown = fitted_problem(tokenizer, problem, plans, max_length=256)
    assert shown.startswith(start) and shown.endswith(end) and "[...]" in shown
    for plan in plans:
        ids = tokenizer(render_input(shown, plan))["input_ids"]
        assert len(ids) + 1 <= 256  # its end token counted
        assert render_input(shown, plan).endswith(plan)  # every token of the plan is there
    short = "What is 2 + 3?"
    assert fitted_problem(tokenizer, short, plans, max_length=256) == short
    with pytest.raises(RewardModelError, match="plans are never cut"):
        fitted_problem(tokenizer, problem, plans, max_length=64)


class EqualScores:
    """A scorer that cannot tell plans apart (and reads plans up to 1,000 characters)."""

    max_length = 1000

    def fits(self, plan: str) -> bool:
        return len(plan) <= self.max_length

    def score(self, problem: str, plans: list[str]) -> list[float]:
        return [0.5] * len(plans)


def chooser_scoring_with(tmp_path: Path, scorer: EqualScores) -> PlanChooser:
    """``--graph auto``'s chooser over the plans cot and vote3, scoring with ``scorer``."""
    space = plan_space_from_data({"plans": [
        {"name": "cot", "graph": "majority_vote", "settings": {"n_candidates": 1}},
        {"name": "vote3", "graph": "majority_vote", "settings": {"n_candidates": 3}}]})  # fmt: skip
    folder = tmp_path / "rm"
    folder.mkdir()
    record = {"input_format": 1, "base_model": "smollm2",
              "plans": {p.digest: p.name for p in space.plans}}  # fmt: skip
    (folder / RM_RECORD).write_text(json.dumps(record))
    return PlanChooser(str(folder), space=space, _scorer=scorer)  # type: ignore[arg-type]


def test_exactly_tied_plans_are_drawn_between_and_recorded(tmp_path: Path) -> None:
    chooser = chooser_scoring_with(tmp_path, EqualScores())
    choices = [chooser.choose(f"What is {n} + 1?") for n in range(20)]
    assert {c.chosen.name for c in choices} == {"cot", "vote3"}  # not the earlier one each time
    assert all(c.record()["tied"] == ["cot", "vote3"] for c in choices)
    again = chooser.choose("What is 3 + 1?")
    assert again.chosen.name == choices[3].chosen.name  # the same draw for the same problem


def test_plan_only_baselines_learn_a_prior_and_nothing_that_depends_on_the_problem() -> None:
    two = make_plan("vote2", load_bundled("majority_vote"), {"n_candidates": 2}).text
    three = make_plan("vote3", load_bundled("majority_vote"), {"n_candidates": 3}).text
    five = make_plan("vote5", load_bundled("majority_vote"), {"n_candidates": 5}).text
    # more candidates win 3 of 4 training pairs: both baselines learn that prior
    train = [{"input": f"p{i}", "chosen": five, "rejected": COT.text} for i in range(3)]
    train.append({"input": "p3", "chosen": COT.text, "rejected": five})
    prior, features = PlanPrior.fit(train), PlanFeatureModel.fit(train)
    assert prior.best() == five and features.score(five) > features.score(COT.text)
    assert prior.accuracy(train) == features.accuracy(train) == 0.75
    # the features generalise to unseen plans along the same setting; the prior cannot
    unseen = [{"chosen": three, "rejected": two}]
    assert features.accuracy(unseen) == 1.0 and prior.accuracy(unseen) == 0.5
    # where the winner depends on the problem, a plan-only model is at chance
    mixed = [{"chosen": COT.text, "rejected": five}, {"chosen": five, "rejected": COT.text}]
    assert prior.accuracy(mixed) == features.accuracy(mixed) == 0.5


def test_a_cheaper_plan_right_less_often_never_wins_on_cost() -> None:
    worse = runs(COT, [True, True, False], tokens=100) + runs(VOTE, [True, True, True], tokens=400)
    assert problem_pairs(worse, cheaper=True) == []  # 2/3 against 3/3: within the margin


def test_with_a_cost_tolerance_a_cheaper_plan_nearly_as_reliable_wins() -> None:
    nearly = runs(COT, [True, True, False], tokens=100) + runs(VOTE, [True, True, True], tokens=400)
    [pair] = problem_pairs(nearly, cheaper=True, cost_tolerance=0.34)
    assert pair["chosen_plan"] == "cot" and pair["source"] == "cheaper-over-costlier"
    seldom = runs(COT, [True, False, False], tokens=100) + runs(VOTE, [True, True, False], 400)
    assert problem_pairs(seldom, cheaper=True, cost_tolerance=0.34) == []  # right 1 in 3
    with pytest.raises(PairsError, match="must be below success_margin"):
        problem_pairs(nearly, cheaper=True, cost_tolerance=0.5)


def test_a_family_by_plan_model_sees_what_the_prior_cannot_left_out_problem_by_problem() -> None:
    pairs = []
    for index in range(8):  # easy problems: the cheap plan wins; traps: the costly one
        family = "easy" if index % 2 else "trap"
        chosen, rejected = (COT.text, VOTE.text) if family == "easy" else (VOTE.text, COT.text)
        pairs.append({"chosen": chosen, "rejected": rejected, "problem_id": str(index),
                      "family": family})  # fmt: skip
    prior = leave_one_problem_out(pairs, PlanPrior.fit)
    family = leave_one_problem_out(pairs, lambda ps: FamilyPlanModel.fit(ps, lambda p: p["family"]))
    assert family["accuracy"] == 1.0 and prior["accuracy"] <= 0.5
    assert family["problems"] == 8 and family["interval"][0] == 1.0


class ReadsOnlyCot(EqualScores):
    """A scorer whose length limit leaves no room beside the vote3 plan."""

    def fits(self, plan: str) -> bool:
        return "n_candidates: 3" not in plan


def test_a_plan_too_long_to_score_is_rejected_not_cut_and_the_rest_are_scored(
    tmp_path: Path,
) -> None:
    chooser = chooser_scoring_with(tmp_path, ReadsOnlyCot())
    choice = chooser.choose("What is 2 + 2?")
    assert choice.chosen.name == "cot"
    [rejected] = [c for c in choice.candidates if c.rejected]
    assert rejected.name == "vote3" and "longer than the reward model reads" in rejected.rejected
