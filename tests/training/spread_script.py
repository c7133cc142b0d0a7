"""A scripted policy for the reward-spread tests: training rows in TMAS's export format, and a
sampler that answers each row right in a set number of its completions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Prompt = list[dict[str, str]]
Sampler = Callable[[list[Prompt]], list[list[str]]]


def row(question: str, gold: str, **extra: Any) -> dict[str, Any]:
    return {
        "prompt": [
            {"role": "system", "content": "Answer as \\boxed{n}."},
            {"role": "user", "content": question},
        ],
        "data_source": "tmas/test",
        "ability": "math",
        "reward_model": {"ground_truth": gold, "style": "rule"},
        "extra_info": {"problem": question, "index": 7, **extra},
        "_source": "normal",
    }


def scripted(rows: list[dict[str, Any]], correct: list[int], k: int, calls: list) -> Sampler:
    """A sampler answering each row's question correctly (its gold answer, boxed) in the first
    ``correct[i]`` of ``k`` completions and wrongly in the rest; ``calls`` records each batch's
    questions."""
    plan = {
        row["prompt"][-1]["content"]: (row["reward_model"]["ground_truth"], c)
        for row, c in zip(rows, correct, strict=True)
    }

    def sample(prompts: list[Prompt]) -> list[list[str]]:
        questions = [prompt[-1]["content"] for prompt in prompts]
        calls.append(questions)
        answers = []
        for question in questions:
            gold, right = plan[question]
            wrong = f"{gold}1"
            answers.append(
                [f"So \\boxed{{{gold}}}." for _ in range(right)]
                + [f"I think \\boxed{{{wrong}}}." for _ in range(k - right)]
            )
        return answers

    return sample
