"""The hybrid reward on hand-written completions: correct and incorrect, novel and not novel
with a scripted judge, judge failures recorded (never raised), weights, and the same scores
through the TRL reward functions and verl's ``compute_score``."""

from __future__ import annotations

import pytest
from langchain_core.language_models import FakeListChatModel

from tmas.training.novelty import JudgeError, NoveltyJudge, load_template, parse_verdict
from tmas.training.rewards import HybridReward, RewardWeights, Sample
from tmas.training.trl_rewards import TRLRewards
from tmas.training.verl_reward import compute_score

RIGHT = "Tom has 3 + 4 = 7 apples, so the answer is \\boxed{7}."
WRONG = "Tom has 3 * 4 = 12 apples, so \\boxed{12}."
BANK = ["Add the two amounts directly"]


def guideline(truth: str = "7") -> Sample:
    return Sample("guideline", truth, problem="3 apples and 4 more?", guidelines=BANK)


def judge(*replies: str) -> NoveltyJudge:
    return NoveltyJudge(FakeListChatModel(responses=list(replies)))


class FailingChat(FakeListChatModel):
    def _call(self, *args, **kwargs) -> str:
        raise ConnectionError("judge endpoint down")


class CountingChat(FakeListChatModel):
    """Answers like FakeListChatModel and counts its calls."""

    calls: int = 0

    def _call(self, *args, **kwargs) -> str:
        self.calls += 1
        return super()._call(*args, **kwargs)


def test_correctness_for_every_source_and_the_experience_bonus() -> None:
    reward = HybridReward()
    assert reward.score(Sample("normal", "7"), RIGHT) == {
        "correctness": 1.0,
        "experience": None,
        "novelty": None,
        "total": 1.0,
    }
    assert reward.score(Sample("normal", "7"), WRONG)["total"] == 0.0
    right = reward.score(Sample("experience", "7"), RIGHT)
    assert (right["experience"], right["total"]) == (1.0, 1.5)
    assert reward.score(Sample("experience", "7"), WRONG)["experience"] == 0.0
    assert reward.score(Sample("normal", "\\frac{1}{2}"), "\\boxed{0.5}")["correctness"] == 1.0
    assert reward.score(Sample("normal", "7"), "no answer here")["correctness"] == 0.0


def test_novelty_is_judged_on_guideline_rows_only() -> None:
    reward = HybridReward(judge=judge("A different idea.\nNovel: yes", "Novel: no"))
    novel = reward.score(guideline(), RIGHT)
    assert (novel["novelty"], novel["total"]) == (1.0, 1.5)
    same = reward.score(guideline(), WRONG)
    assert (same["novelty"], same["total"]) == (0.0, 0.0)
    assert reward.score(Sample("normal", "7"), RIGHT)["novelty"] is None
    empty_bank = Sample("guideline", "7", problem="?", guidelines=[])
    assert reward.score(empty_bank, WRONG)["novelty"] == 1.0  # no strategy to repeat


def test_judge_failures_are_recorded_not_raised() -> None:
    reward = HybridReward(judge=judge("I cannot decide."))
    unparsed = reward.score(guideline(), RIGHT)
    assert unparsed["novelty"] is None and unparsed["total"] == 1.0
    assert "no 'Novel: yes|no' verdict" in unparsed["judge_error"]
    reward.judge = NoveltyJudge(FailingChat(responses=[""]))
    down = reward.score(guideline(), RIGHT)
    assert "judge endpoint down" in down["judge_error"]
    assert reward.judge_failures == 2
    assert "judge_error" not in reward.score(Sample("normal", "7"), RIGHT)


def test_weights_and_novelty_only_when_correct() -> None:
    weights = RewardWeights(correctness=2.0, novelty=1.0, novelty_needs_correct=True)
    reward = HybridReward(weights, judge("Novel: yes", "Novel: yes"))
    assert reward.score(guideline(), RIGHT)["total"] == 3.0
    wrong = reward.score(guideline(), WRONG)
    assert (wrong["novelty"], wrong["total"]) == (0.0, 0.0)
    with pytest.raises(ValueError):
        RewardWeights(novelty=-1)


def test_trl_functions_share_one_scoring_and_log_per_source() -> None:
    counting = CountingChat(responses=["Novel: yes"])
    reward = HybridReward(judge=NoveltyJudge(counting))
    trl = TRLRewards(reward)
    logged: dict[str, float] = {}
    columns = {
        "_source": ["normal", "experience", "guideline"],
        "reward_model": [{"ground_truth": "7"}] * 3,
        "extra_info": [{"problem": "?", "guidelines": BANK}] * 3,
        "trainer_state": object(),
        "log_metric": logged.__setitem__,
    }
    completions = [[{"role": "assistant", "content": c}] for c in (RIGHT, WRONG, RIGHT)]
    correctness, experience, novelty = trl.functions()
    assert [f.__name__ for f in trl.functions()] == ["correctness", "experience", "novelty"]
    assert correctness(prompts=[], completions=completions, **columns) == [1.0, 0.0, 1.0]
    assert experience(prompts=[], completions=completions, **columns) == [None, 0.0, None]
    assert novelty(prompts=[], completions=completions, **columns) == [None, None, 1.0]
    assert counting.calls == 1  # one guideline row, judged once for the three functions
    assert logged["reward/guideline/novelty"] == 1.0
    assert logged["reward/experience/total"] == 0.0
    assert logged["reward/normal/correctness"] == 1.0
    assert trl.weights() == [1.0, 0.5, 0.5]


def test_verl_compute_score_reads_the_kind_from_the_row() -> None:
    scored = compute_score("math", RIGHT, "7", {"mode": "exploit"})
    assert scored["score"] == 1.5 and scored["experience"] == 1.0
    assert compute_score("math", WRONG, "7", {"mode": "initial"})["score"] == 0.0
    unjudged = compute_score("math_grm", RIGHT, "7", {"guidelines": BANK, "problem": "?"})
    assert unjudged["score"] == 1.0 and unjudged["novelty"] == 0.0


def test_judge_template_and_verdict_parsing(tmp_path) -> None:
    assert parse_verdict("Novel: **yes**") is True
    with pytest.raises(JudgeError):
        parse_verdict("maybe")
    bad = tmp_path / "judge.txt"
    bad.write_text("Is {solution} new?")
    with pytest.raises(ValueError, match="lacks {problem}, {strategies}"):
        load_template(bad)


def test_each_new_batch_is_scored_afresh() -> None:
    """Batches that come one after another (each list freed before the next is made) get their
    own scores, never the previous batch's."""
    correctness = TRLRewards(HybridReward()).functions()[0]
    columns = {"_source": ["normal"] * 2, "reward_model": [{"ground_truth": "7"}] * 2}
    results = [
        correctness(completions=[f"\\boxed{{{answer}}}"] * 2, **columns)
        for answer in (7, 8, 7, 8)
    ]
    assert results == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]
