"""The hybrid reward on hand-written completions: each component's effect on GRPO advantages
inside one group (the only place a reward term can teach), novelty paid only for a right answer,
an empty bank not judged, failed judgements left out (never raised), the judge's own verdict
read even where it echoes the instruction, and the same scores through the TRL reward functions
(test_trl_advantages.py puts them through TRL's GRPOTrainer itself)."""

from __future__ import annotations

import statistics

import pytest
from langchain_core.language_models import FakeListChatModel

from tmas.training.grpo import make_judge
from tmas.training.grpo_settings import GRPOSettings
from tmas.training.novelty import JudgeError, NoveltyJudge, load_template, parse_verdict
from tmas.training.rewards import HybridReward, RewardWeights, Sample
from tmas.training.trl_rewards import TRLRewards

RIGHT = "Tom has 3 + 4 = 7 apples, so the answer is \\boxed{7}."
WRONG = "Tom has 3 * 4 = 12 apples, so \\boxed{12}."
COPIED = "As before, \\boxed{8}."  # the earlier attempt's (wrong) answer
CUT = "Tom has 3 apples and"  # cut by the budget: no answer
BANK = ["Add the two amounts directly"]


def guideline(truth: str = "7", bank: list[str] | None = None) -> Sample:
    return Sample(
        "guideline",
        truth,
        problem="3 apples and 4 more?",
        guidelines=BANK if bank is None else bank,
    )


def judge(*replies: str) -> NoveltyJudge:
    return NoveltyJudge(FakeListChatModel(responses=list(replies)))


def advantages(totals: list[float | None]) -> list[float]:
    """GRPO's group-normalised advantages, as TRL computes them with ``scale_rewards="group"``:
    left-out completions (None) do not enter the mean and get 0."""
    scored = [t for t in totals if t is not None]
    mean, spread = statistics.fmean(scored), statistics.stdev(scored) if len(scored) > 1 else 0.0
    return [0.0 if t is None else round((t - mean) / (spread + 1e-4), 6) for t in totals]


class FailingChat(FakeListChatModel):
    def _call(self, *args, **kwargs) -> str:
        raise ConnectionError("judge endpoint down")


class CountingChat(FakeListChatModel):
    """Answers like FakeListChatModel and counts its calls."""

    calls: int = 0

    def _call(self, *args, **kwargs) -> str:
        self.calls += 1
        return super()._call(*args, **kwargs)


def test_correctness_for_every_source() -> None:
    reward = HybridReward()
    assert reward.score(Sample("normal", "7"), RIGHT) == {
        "correctness": 1.0, "experience": None, "novelty": None, "total": 1.0,
    }  # fmt: skip
    assert reward.score(Sample("normal", "7"), WRONG)["total"] == 0.0
    assert reward.score(Sample("normal", "\\frac{1}{2}"), "\\boxed{0.5}")["correctness"] == 1.0
    assert reward.score(Sample("normal", "7"), "no answer here")["correctness"] == 0.0


def test_the_experience_weight_changes_advantages_inside_a_group() -> None:
    """An exploit row whose earlier attempt answered 8 (wrong): repeating it ranks below another
    wrong answer; a constant bonus on correct answers would have been cancelled by the
    normalisation (the same advantages whatever its weight)."""
    row = Sample("experience", "7", parent_answer="8")
    group = [RIGHT, COPIED, WRONG, CUT]

    def group_advantages(weight: float) -> list[float]:
        reward = HybridReward(RewardWeights(experience=weight))
        return advantages([reward.score(row, completion)["total"] for completion in group])

    without, with_repair = group_advantages(0.0), group_advantages(1.0)
    assert without[1] == without[2]  # correctness alone cannot tell a copy from a new try
    assert with_repair != without and with_repair[2] > with_repair[1]
    scores = [HybridReward().score(row, c)["experience"] for c in group]
    assert scores == [1.0, 0.0, 1.0, 0.0]  # no answer earns no repair either
    right_parent = Sample("experience", "7", parent_answer="7")  # keeping a right answer
    assert [HybridReward().score(right_parent, c)["experience"] for c in group] == [1, 0, 0, 0]
    assert HybridReward().score(Sample("experience", "7"), RIGHT)["experience"] is None
    no_answer_before = Sample("experience", "7", parent_answer="")
    assert [HybridReward().score(no_answer_before, c)["experience"] for c in group] == [1, 1, 1, 0]


def test_novelty_is_paid_only_with_a_right_answer_by_default() -> None:
    reward = HybridReward(judge=judge("A different idea.\nNovel: yes", "Novel: no"))
    novel = reward.score(guideline(), RIGHT)
    assert (novel["novelty"], novel["total"]) == (1.0, 1.5)
    wrong_novel = HybridReward(judge=judge("Novel: yes")).score(guideline(), WRONG)
    assert (wrong_novel["novelty"], wrong_novel["total"]) == (0.0, 0.0)
    paid = HybridReward(RewardWeights(novelty_needs_correct=False), judge("Novel: yes"))
    assert paid.score(guideline(), WRONG)["total"] == 0.5  # only when asked for
    assert reward.score(Sample("normal", "7"), RIGHT)["novelty"] is None


def test_novelty_changes_advantages_between_right_answers() -> None:
    reward = HybridReward(judge=judge("Novel: yes", "Novel: no", "Novel: yes"))
    totals = [reward.score(guideline(), c)["total"] for c in (RIGHT, RIGHT, RIGHT, WRONG)]
    assert totals == [1.5, 1.0, 1.5, 0.0]
    assert len(set(advantages(totals)[:3])) == 2


def test_an_empty_bank_is_not_judged() -> None:
    counting = CountingChat(responses=["Novel: yes"])
    reward = HybridReward(judge=NoveltyJudge(counting))
    scored = reward.score(guideline(bank=[]), RIGHT)
    assert scored["novelty"] is None and scored["total"] == 1.0 and counting.calls == 0


def test_a_failed_judgement_leaves_the_completion_out() -> None:
    reward = HybridReward(judge=judge("I cannot decide.", "Novel: yes", "Novel: no"))
    unparsed = reward.score(guideline(), RIGHT)
    assert unparsed["excluded"] is True and "no 'Novel: yes|no' verdict" in unparsed["judge_error"]
    assert all(unparsed[k] is None for k in ("correctness", "experience", "novelty", "total"))
    others = [reward.score(guideline(), RIGHT)["total"] for _ in range(2)]
    assert advantages([None, *others])[0] == 0.0  # no advantage, and not in the group's mean
    reward.judge = NoveltyJudge(FailingChat(responses=[""]))
    assert "judge endpoint down" in reward.score(guideline(), RIGHT)["judge_error"]
    assert reward.judge_failures == 2
    assert "judge_error" not in reward.score(Sample("normal", "7"), RIGHT)


def test_a_judge_is_named_or_chosen_never_assumed() -> None:
    rows = [{"_source": "guideline", "extra_info": {"guidelines": BANK}}]
    with pytest.raises(ValueError, match="need a novelty judge.*--judge-self"):
        make_judge(GRPOSettings(data="/d.jsonl"), rows)
    assert make_judge(GRPOSettings(data="/d", judge={"enabled": False}), rows) is None
    assert make_judge(GRPOSettings(data="/d", weights={"novelty": 0}), rows) is None
    empty_bank = [{"_source": "guideline", "extra_info": {"guidelines": []}}]
    assert make_judge(GRPOSettings(data="/d.jsonl"), empty_bank) is None


def test_weights_are_checked() -> None:
    weights = RewardWeights(correctness=2.0, novelty=1.0)
    assert HybridReward(weights, judge("Novel: yes")).score(guideline(), RIGHT)["total"] == 3.0
    with pytest.raises(ValueError):
        RewardWeights(novelty=-1)


def test_trl_functions_share_one_scoring_and_log_per_source() -> None:
    counting = CountingChat(responses=["Novel: yes", "maybe"])
    reward = HybridReward(judge=NoveltyJudge(counting))
    trl = TRLRewards(reward)
    logged: dict[str, float] = {}
    extra = {"problem": "?", "guidelines": BANK, "parent_answer": "8"}
    columns = {
        "_source": ["normal", "experience", "guideline", "guideline"],
        "reward_model": [{"ground_truth": "7"}] * 4,
        "extra_info": [extra] * 4,
        "trainer_state": object(),
        "log_metric": logged.__setitem__,
    }
    completions = [[{"role": "assistant", "content": c}] for c in (RIGHT, WRONG, RIGHT, RIGHT)]
    correctness, experience, novelty = trl.functions()
    assert [f.__name__ for f in trl.functions()] == ["correctness", "experience", "novelty"]
    assert correctness(prompts=[], completions=completions, **columns) == [1.0, 0.0, 1.0, None]
    assert experience(prompts=[], completions=completions, **columns) == [None, 1.0, None, None]
    assert novelty(prompts=[], completions=completions, **columns) == [None, None, 1.0, None]
    assert counting.calls == 2  # two guideline rows, each judged once for the three functions
    assert logged["reward/guideline/novelty"] == 1.0 and logged["judge_failures"] == 1.0
    assert logged["reward/experience/total"] == 0.5
    assert trl.last_totals() == [1.0, 0.5, 1.5, None] and trl.excluded == 1
    assert trl.weights() == [1.0, 0.5, 0.5]


def test_judge_template_and_verdict_parsing(tmp_path) -> None:
    assert parse_verdict("Novel: **yes**") is True
    with pytest.raises(JudgeError):
        parse_verdict("maybe")
    bad = tmp_path / "judge.txt"
    bad.write_text("Is {solution} new?")
    with pytest.raises(ValueError, match="lacks {problem}, {strategies}"):
        load_template(bad)


def test_a_judge_echoing_the_instruction_is_read_by_its_own_verdict() -> None:
    """The instruction the bundled template gives, echoed before or after the judge's verdict,
    offers both verdicts and is never read as one."""
    instruction = load_template(None).rsplit("{solution}", 1)[1].strip()
    assert '"Novel: yes" or "Novel: no"' in instruction
    replies = {
        f"The solution counts on a number line.\nNovel: yes\n{instruction}": True,
        f"{instruction}\nNovel: yes": True,
        f"Novel: yes ({instruction})": True,
        "Novel: yes\nFormat: Novel: yes|no": True,
        "Novel: yes. (Answer Novel: yes/no.)": True,
        f"{instruction}\nNovel: no": False,
        "Novel: no\nNovel: yes or no?": False,
    }
    assert {reply: parse_verdict(reply) for reply in replies} == replies
    with pytest.raises(JudgeError):  # the instruction alone is no verdict
        parse_verdict(instruction)
    assert judge(f"Novel: yes\n{instruction}").novelty("?", BANK, RIGHT) == 1.0


def test_each_new_batch_is_scored_afresh() -> None:
    """Batches that come one after another (each list freed before the next is made) get their
    own scores, never the previous batch's."""
    correctness = TRLRewards(HybridReward()).functions()[0]
    columns = {"_source": ["normal"] * 2, "reward_model": [{"ground_truth": "7"}] * 2}
    results = [
        correctness(completions=[f"\\boxed{{{answer}}}"] * 2, **columns) for answer in (7, 8, 7, 8)
    ]
    assert results == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]
