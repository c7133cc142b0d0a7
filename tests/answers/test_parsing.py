"""Tolerant parsers of model output, answer grading, and garbage recorded during a run."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from tmas import build_tmas_graph
from tmas.answers.grading import is_correct, pass_at_1
from tmas.answers.parsing import (
    extract_answer,
    normalize_answer,
    parse_bullets,
    parse_strategy,
    parse_verification,
)
from tmas.config import TMASConfig
from tmas.roles import Role
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies

# ---------------------------------------------------------------- extract_answer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so \\boxed{18}", "18"),
        ("x \\boxed{\\frac{a^{2}}{b_{1}}} y", "\\frac{a^{2}}{b_{1}}"),
        ("\\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),
        ("first \\boxed{1}, then \\boxed{2}, finally \\boxed{ 3 }", "3"),
        ("\\boxed {5}", "5"),
        ("\\boxed{7} and an empty \\boxed{}", "7"),
    ],
)
def test_extract_boxed_answer(text: str, expected: str) -> None:
    parsed = extract_answer(text)
    assert parsed.value == expected
    assert parsed.problem is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is 42.", "42"),
        ("Some work.\nFinal answer: 7", "7"),
        ("answer: $\\frac{1}{2}$", "\\frac{1}{2}"),
    ],
)
def test_extract_answer_falls_back_to_plain_text(text: str, expected: str) -> None:
    parsed = extract_answer(text)
    assert parsed.value == expected
    assert parsed.problem is not None and "boxed" in parsed.problem


@pytest.mark.parametrize(
    "text", ["", "asdf qwer", "\\boxed{", "\\boxed{}", "\\boxed 5", "}}}{{{", "\x00\x01"]
)
def test_extract_answer_garbage_gives_none_and_a_problem(text: str) -> None:
    parsed = extract_answer(text)
    assert parsed.value is None
    assert parsed.problem == "no answer found"


def test_extract_answer_tolerates_none() -> None:
    assert extract_answer(None).value is None  # type: ignore[arg-type]


# ---------------------------------------------------------------- normalize_answer


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1,000", "1000"),
        ("$1,000.0$", "1000"),
        ("18.0", "18"),
        ("0.50", "0.5"),
        ("-3", "-3"),
        ("  12. ", "12"),
        ("x = 5", "5"),
        ("\\dfrac{1}{2}", "\\frac{1}{2}"),
        ("\\text{18}", "18"),
        ("\\text{ 18 dollars}", "18"),
        ("\\left( 1, 2 \\right)", "(1,2)"),
        ("", None),
        ("   ", None),
        (None, None),
    ],
)
def test_normalize_answer(raw: str | None, expected: str | None) -> None:
    assert normalize_answer(raw) == expected


# ---------------------------------------------------------------- parse_verification


@pytest.mark.parametrize(
    ("text", "verdict", "score"),
    [
        ("Fine.\nScore: 7/10\nVerdict: correct", "correct", 0.7),
        ("Score: 0.3\nVerdict: incorrect", "incorrect", 0.3),
        ("Score: 4/5\nVerdict: correct", "correct", 0.8),
        ("Score: 80/100\nVerdict: right", "correct", 0.8),
        ("**Score:** 9/10 **Verdict:** wrong", "incorrect", 0.9),
        ("Score: 15/10\nVerdict: correct", "correct", 1.0),
        ("Score: 6\nVerdict: correct", "correct", 0.6),
        ("Score: 2/10 ... on reflection Score: 9/10\nVerdict: correct", "correct", 0.9),
    ],
)
def test_parse_verification_scales(text: str, verdict: str, score: float) -> None:
    parsed = parse_verification(text)
    assert parsed.value[0] == verdict  # type: ignore[index]
    assert parsed.value[1] == pytest.approx(score)  # type: ignore[index]
    assert parsed.problem is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("Verdict: correct", ("correct", 1.0)), ("Verdict: wrong", ("incorrect", 0.0))],
)
def test_parse_verification_verdict_only(text: str, expected: tuple[str, float]) -> None:
    parsed = parse_verification(text)
    assert parsed.value == expected
    assert parsed.problem == "no score"


def test_parse_verification_score_only_infers_the_verdict() -> None:
    assert parse_verification("Score: 8/10").value == ("correct", 0.8)
    assert parse_verification("Score: 2/10").value == ("incorrect", 0.2)
    assert parse_verification("Score: 8/10").problem == "no verdict"


@pytest.mark.parametrize("text", ["", "blah blah", "Score: lots\nVerdict: maybe", "\ufffd" * 50])
def test_parse_verification_garbage(text: str) -> None:
    parsed = parse_verification(text)
    assert parsed.value == ("unknown", None)
    assert parsed.problem == "no score; no verdict"


# ---------------------------------------------------------------- bullets and strategies


def test_parse_bullets_styles_and_limits() -> None:
    parsed = parse_bullets("- a is 3\n* b is 4\n\u2022 c is 5\n1. d is 6\n2) e is 7", max_items=4)
    assert parsed.value == ["a is 3", "b is 4", "c is 5", "d is 6"]
    assert parsed.problem is None
    long = parse_bullets("- " + "x" * 500, max_chars=50)
    assert long.value == ["x" * 50]


def test_parse_bullets_without_bullets_gives_nothing() -> None:
    parsed = parse_bullets("a plain line that is long enough\nshort\n\n")
    assert parsed.value == []
    assert parsed.problem == "no bullet list"


def test_parse_bullets_drops_headings() -> None:
    assert parse_bullets("- Verification summary:\n- Verified: x = 3").value == ["Verified: x = 3"]


@pytest.mark.parametrize("text", ["", "   \n\n"])
def test_parse_bullets_empty(text: str) -> None:
    parsed = parse_bullets(text)
    assert parsed.value == []
    assert parsed.problem == "empty output"


def test_parse_strategy() -> None:
    assert parse_strategy("Strategy: work backwards").value == "work backwards"
    assert parse_strategy("Thinking...\nSTRATEGY = casework").value == "casework"
    assert parse_strategy("Strategy: " + "y" * 500, max_chars=20).value == "y" * 20
    unlabelled = parse_strategy("  \nFirst line here\nsecond")
    assert unlabelled.value is None
    assert unlabelled.problem == "no 'Strategy:' line"
    empty = parse_strategy("")
    assert empty.value is None
    assert empty.problem is not None


# ---------------------------------------------------------------- grading

EQUIVALENT = [
    ("1/2", "0.5"),
    ("0.5", "\\frac{1}{2}"),
    ("1,000", "1000"),
    ("\\frac{3}{4}", "0.75"),
    ("\\dfrac{3}{4}", "\\frac{3}{4}"),
    ("18.0", "18"),
    ("x = 18", "18"),
    ("2^{10}", "1024"),
    ("\\frac{\\sqrt{2}}{2}", "\\sqrt{2}/2"),
]
WRONG = [("17", "18"), ("\\frac{3}{4}", "0.7"), ("1001", "1,000"), ("-18", "18")]
GARBAGE = [("}}{{garbage\\", "18"), ("", "18"), ("abc", "18"), ("\\text{banana}", "1/2")]


@pytest.mark.parametrize(("answer", "gold"), EQUIVALENT)
def test_equivalent_forms_are_correct(answer: str, gold: str) -> None:
    assert is_correct(answer, gold)


@pytest.mark.parametrize(("answer", "gold"), WRONG + GARBAGE)
def test_wrong_or_garbage_answers_are_not_correct(answer: str, gold: str) -> None:
    assert not is_correct(answer, gold)


def test_missing_answer_or_gold_is_not_correct() -> None:
    assert not is_correct(None, "18")
    assert not is_correct("18", None)
    assert not is_correct("1" * 1000, "18")


def test_pass_at_1() -> None:
    assert pass_at_1(["18", "17", None, "18.0"], "18") == 0.5
    assert pass_at_1(["18"], None) is None
    assert pass_at_1([], "18") is None


def test_grading_works_outside_the_main_thread() -> None:
    cases = EQUIVALENT + WRONG + GARBAGE
    expected = [True] * len(EQUIVALENT) + [False] * (len(WRONG) + len(GARBAGE))

    def grade(pair: tuple[str, str]) -> tuple[bool, bool]:
        return is_correct(*pair), threading.current_thread() is threading.main_thread()

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(grade, cases))
    assert [ok for ok, _ in results] == expected
    assert not any(on_main for _, on_main in results)


# ---------------------------------------------------------------- garbage during a run


@dataclass(frozen=True)
class MumblingReplies(ScriptedReplies):
    """Scripted replies whose solver never states an answer and whose verifier is vague."""

    def reply(
        self, role: Role | None, system: str, user: str, salt: str = "", prompt: str | None = None
    ) -> str:
        if role == "solver":
            return "Hmm, I am not sure about this one."
        if role == "verifier":
            return "Looks fine to me?"
        if role == "guideline":
            return "I just tried stuff until something worked"
        return super().reply(role, system, user, salt, prompt)


def test_garbage_from_the_model_is_recorded_in_parse_issues() -> None:
    n, m = 3, 2
    config = TMASConfig(n_candidates=n, n_verifications=m, max_iterations=2)
    model = ScriptedChatModel(replies=MumblingReplies())
    state = build_tmas_graph(config, llm=model).invoke(
        {"problem": "What is 9 + 9?", "gold_answer": "18"}
    )

    assert state["stop_reason"] == "max_iterations"
    assert [r["answers"] for r in state["history"]] == [[None] * n, [None] * n]
    assert [r["pass_at_1"] for r in state["history"]] == [0.0, 0.0]
    assert state["final_answer"] is None
    assert all(v["verdict"] == "unknown" and v["score"] is None for v in state["verifications"])

    issues = state["parse_issues"]
    by_role: dict[str, list[dict]] = {}
    for issue in issues:
        by_role.setdefault(issue["role"], []).append(issue)
    assert set(by_role) == {"solver", "verifier", "guideline"}
    assert len(by_role["solver"]) == 2 * n
    assert {i["problem"] for i in by_role["solver"]} == {"no answer found"}
    assert sorted((i["iteration"], i["index"]) for i in by_role["solver"]) == [
        (it, idx) for it in (1, 2) for idx in range(n)
    ]
    assert by_role["solver"][0]["excerpt"] == "Hmm, I am not sure about this one."
    assert len(by_role["verifier"]) == 2 * n * m
    assert {i["problem"] for i in by_role["verifier"]} == {"no score; no verdict"}
    assert len(by_role["guideline"]) == 2 * n
    # An unlabelled line is not a strategy: the bank stays clean.
    assert state["guideline_bank"] == []


def test_plain_text_fallback_keeps_the_number_of_a_phrase() -> None:
    parsed = extract_answer("The final answer to the problem was 21.")
    assert parsed.value == "21"
    assert parsed.problem is not None and "plain-text" in parsed.problem
    assert extract_answer("The answer is that nobody knows.").value is None


def test_parse_issues_are_windowed_like_the_history(tmp_path) -> None:
    from tmas.storage.checkpointer import open_checkpointer
    from tmas.storage.sqlite import connect

    config = TMASConfig(n_candidates=2, n_verifications=1, max_iterations=6, history_window=2)
    saver = open_checkpointer(connect(tmp_path / "runs.sqlite"))
    graph = build_tmas_graph(
        config, llm=ScriptedChatModel(replies=MumblingReplies()), checkpointer=saver
    )
    thread = {"configurable": {"thread_id": "mumbling"}}
    state = graph.invoke({"problem": "What is 9 + 9?"}, thread)

    kept = {issue["iteration"] for issue in state["parse_issues"]}
    assert kept == {5, 6}  # the last two iterations only
    per_iteration = 2 + 2 + 2  # two solvers, two verifiers, two guidelines: all mumble
    assert len(state["parse_issues"]) == 2 * per_iteration
    earlier = [
        snapshot.values.get("parse_issues", [])
        for snapshot in graph.get_state_history(thread)
        if snapshot.values.get("iteration") == 3 and snapshot.next == ("record_iteration",)
    ]
    assert earlier and {i["iteration"] for i in earlier[0]} == {1, 2, 3}  # kept there
