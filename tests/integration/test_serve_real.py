"""``tmas serve`` on the embedded SmolLM2 model: a streamed TMAS request through the openai SDK,
and two requests at once sharing the one embedded engine."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from openai import AsyncOpenAI, OpenAI

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))
from serve_helpers import serving  # noqa: E402

from tmas.llm.backend import BackendSpec  # noqa: E402
from tmas.serve import ChatService  # noqa: E402

PROBLEM = "Tom has 3 apples and buys 4 more. How many apples does he have now?"
TINY = {
    "n_candidates": 2, "n_verifications": 1, "max_iterations": 1, "solver_max_tokens": 48,
    "verifier_max_tokens": 24, "summary_max_tokens": 24, "experience_max_tokens": 32,
    "guideline_max_tokens": 16, "max_retries": 0,
}  # fmt: skip
TINY_CALLS = 2 + 2 + 3 * 2

pytestmark = pytest.mark.slow


def test_serve_streams_a_tmas_run_on_smollm2(tmp_path: Path) -> None:
    backend = BackendSpec(kind="llamacpp", model="smollm2", n_ctx=2048).resolved()
    service = ChatService(backend, db=tmp_path / "runs.sqlite")
    messages = [{"role": "user", "content": PROBLEM}]
    with serving(service) as base_url:
        chunks = list(
            OpenAI(base_url=base_url, api_key="unused").chat.completions.create(
                model="tmas", messages=messages, stream=True, extra_body=TINY
            )
        )

        async def two_at_once() -> list:
            client = AsyncOpenAI(base_url=base_url, api_key="unused")
            return await asyncio.gather(*(
                client.chat.completions.create(
                    model="majority_vote", messages=messages, seed=seed,
                    extra_body={"n_candidates": 2, "solver_max_tokens": 32},
                )
                for seed in (1, 2)
            ))  # fmt: skip

        pair = asyncio.run(two_at_once())
    progress = [
        c.choices[0].delta.model_extra.get("reasoning_content")
        for c in chunks
        if c.choices and c.choices[0].delta.model_extra.get("reasoning_content")
    ]
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    last = chunks[-1]
    by_role = last.model_extra["tmas"]["usage_by_role"]
    assert sum("(initial): answer" in line for line in progress) == 2
    assert content.strip()
    assert last.model_extra["tmas"]["calls"] == TINY_CALLS
    assert last.usage.prompt_tokens == sum(u["input_tokens"] for u in by_role.values()) > 0
    assert 0 < by_role["solver"]["output_tokens"] <= 2 * 48  # the token limits held
    for reply in pair:
        assert reply.model_extra["tmas"]["calls"] == 2
        assert 0 < reply.usage.completion_tokens <= 2 * 32
        assert reply.choices[0].message.content.strip()
