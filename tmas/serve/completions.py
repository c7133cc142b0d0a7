"""What a finished run answers: the chosen solution as an ordinary chat completion (or its
stream chunks), with ``usage`` summing every model call of every run, and a ``tmas`` field
(run ids, answers, per-role usage) that OpenAI clients ignore and ours read."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from tmas.answers.parsing import normalize_answer
from tmas.state import add_usage


def chosen_solution(state: Mapping[str, Any]) -> str:
    """The text a run answers with: the rollout of its last round that reached the final
    answer (the best-verified one when checks were made), else the answer itself; a run
    without an answer gives its best-verified rollout (or nothing).

    Example:
        >>> chosen_solution({"final_answer": "18", "candidates": [
        ...     {"index": 0, "answer": "17", "text": "... 17"},
        ...     {"index": 1, "answer": "18", "text": "9 + 9 = 18"}]})
        '9 + 9 = 18'
        >>> chosen_solution({"final_answer": "18", "candidates": []})
        '\\\\boxed{18}'
        >>> chosen_solution({"final_answer": None, "candidates": [
        ...     {"index": 0, "answer": None, "text": "I think"}]})
        'I think'
    """
    answer = state.get("final_answer")
    if (state.get("extras") or {}).get("proof_choice"):  # a proof run: the proof itself
        return str(answer or "")
    key = normalize_answer(answer)
    scores = {
        s.get("candidate_index"): s.get("mean_score") or 0.0 for s in state.get("summaries") or []
    }
    matching = [
        c
        for c in (state.get("candidates") or [])
        if c.get("text") and (answer is None or normalize_answer(c.get("answer")) == key)
    ]
    if not matching:
        return "" if answer is None else f"\\boxed{{{answer}}}"
    best = max(matching, key=lambda c: (scores.get(c.get("index"), 0.0), -c.get("index", 0)))
    return str(best["text"])


def openai_usage(by_role: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """OpenAI's ``usage`` from per-role counters: every call's prompt and completion tokens.

    Example:
        >>> openai_usage({"solver": {"calls": 2, "input_tokens": 10, "output_tokens": 7},
        ...               "verifier": {"calls": 1, "input_tokens": 5, "output_tokens": 3}})
        {'prompt_tokens': 15, 'completion_tokens': 10, 'total_tokens': 25}
    """
    prompt = sum(int(u.get("input_tokens", 0)) for u in by_role.values())
    completion = sum(int(u.get("output_tokens", 0)) for u in by_role.values())
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def runs_usage(states: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per-role counters summed over several runs.

    Example:
        >>> runs_usage([{"usage": {"solver": {"calls": 1, "input_tokens": 4}}},
        ...             {"usage": {"solver": {"calls": 2, "input_tokens": 6}}}])
        {'solver': {'calls': 3, 'input_tokens': 10, 'output_tokens': 0}}
    """
    total: dict[str, Any] = {}
    for state in states:
        total = add_usage(total, state.get("usage"))
    return {role: dict(counts) for role, counts in total.items()}


def completion_id(run_ids: Sequence[str]) -> str:
    """The completion's id: the first run's, so a client can find the runs again.

    Example:
        >>> completion_id(["ab12", "cd34"])
        'chatcmpl-ab12'
    """
    return f"chatcmpl-{run_ids[0]}"


def extension(
    run_ids: Sequence[str], states: Sequence[Mapping[str, Any]], by_role: dict[str, Any]
) -> dict[str, Any]:
    """The ``tmas`` field: run ids, each run's answer and stop reason, per-role usage."""
    return {
        "run_ids": list(run_ids),
        "final_answers": [s.get("final_answer") for s in states],
        "stop_reasons": [s.get("stop_reason") for s in states],
        "usage_by_role": by_role,
        "calls": sum(int(u.get("calls", 0)) for u in by_role.values()),
    }


def chat_completion(
    model: str, run_ids: Sequence[str], states: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The chat completion of finished runs: one choice per run.

    Example:
        >>> body = chat_completion("tmas", ["r1"], [{"final_answer": "18", "usage": {}}])
        >>> body["choices"][0]["message"]["content"], body["tmas"]["run_ids"]
        ('\\\\boxed{18}', ['r1'])
    """
    by_role = runs_usage(states)
    return {
        "id": completion_id(run_ids),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": index,
                "message": {"role": "assistant", "content": chosen_solution(state)},
                "logprobs": None,
                "finish_reason": "stop",
            }
            for index, state in enumerate(states)
        ],
        "usage": openai_usage(by_role),
        "tmas": extension(run_ids, states, by_role),
    }


def chunk(
    model: str, run_ids: Sequence[str], choices: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` of a stream.

    Example:
        >>> chunk("tmas", ["r1"], [delta(0, content="18")])["choices"][0]["delta"]
        {'content': '18'}
    """
    return {
        "id": completion_id(run_ids),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
        **extra,
    }


def delta(index: int, finish_reason: str | None = None, **fields: Any) -> dict[str, Any]:
    """One choice of a chunk: what choice ``index`` adds.

    Example:
        >>> delta(1, reasoning_content="it 1  vote: 18\\n")["delta"]
        {'reasoning_content': 'it 1  vote: 18\\n'}
    """
    return {"index": index, "delta": fields, "logprobs": None, "finish_reason": finish_reason}
