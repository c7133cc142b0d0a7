"""The official openai SDK (sync, async, streaming) and LangChain's ChatOpenAI as clients of
``tmas serve`` on the scripted model: answers, usage equal to the sum of every internal call,
n runs, concurrent requests, the saved runs behind them, and use without HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from langchain_openai import ChatOpenAI
from openai import AsyncOpenAI, OpenAI
from serve_helpers import SMALL_TMAS, SMALL_TMAS_CALLS, scripted_service, serving, user

from tmas.graphs.run_plan import saved_plan
from tmas.lifecycle.history import saved_state
from tmas.serve import ServeLimits
from tmas.storage import open_storage
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.scripted import ScriptedReplies


def usage_of(body_usage: object) -> dict[str, int]:
    return {
        "prompt_tokens": body_usage.prompt_tokens,  # type: ignore[attr-defined]
        "completion_tokens": body_usage.completion_tokens,  # type: ignore[attr-defined]
    }


def test_openai_sdk_completion_is_a_saved_run_with_every_call_counted(tmp_path: Path) -> None:
    with FakeOpenAIServer(replies=ScriptedReplies(answers=("18",))) as endpoint:
        service = scripted_service(endpoint, tmp_path / "runs.sqlite")
        with serving(service) as base_url:
            client = OpenAI(base_url=base_url, api_key="unused")
            models = [m.id for m in client.models.list()]
            raw = client.chat.completions.with_raw_response.create(
                model="tmas", messages=user(), extra_body=SMALL_TMAS
            )
            reply = raw.parse()
            run_record = httpx.get(f"{base_url}/runs/{reply.model_extra['tmas']['run_ids'][0]}")
        served = endpoint.served_usage
        calls = endpoint.request_count
    assert "tmas" in models and "majority_vote" in models and "latent_mas" not in models
    assert calls == SMALL_TMAS_CALLS
    assert reply.choices[0].message.content.rstrip().endswith("\\boxed{18}")
    assert reply.choices[0].finish_reason == "stop"
    assert usage_of(reply.usage) == served  # every internal call, not the answer alone
    assert reply.usage.total_tokens == served["prompt_tokens"] + served["completion_tokens"]
    extension = reply.model_extra["tmas"]
    (run_id,) = extension["run_ids"]
    assert raw.headers["x-tmas-run-id"] == run_id and reply.id == f"chatcmpl-{run_id}"
    assert extension["calls"] == calls and extension["final_answers"] == ["18"]
    by_role = extension["usage_by_role"]
    assert {r: u["calls"] for r, u in by_role.items()} == {
        "solver": 2, "verifier": 2, "summary": 2, "experience": 2, "guideline": 2,
    }  # fmt: skip
    record = run_record.json()
    assert record["status"] == "finished" and record["final_answer"] == "18"
    assert record["content"] == reply.choices[0].message.content
    storage = open_storage(tmp_path / "runs.sqlite")
    try:  # the request is an ordinary saved run: tmas show / trace / resume see it
        assert storage.registry.get(run_id).graph == "tmas"
        assert saved_state(storage, run_id)["stop_reason"] == "max_iterations"
    finally:
        storage.close()


def test_openai_sdk_stream_sends_progress_then_the_answer_then_usage(tmp_path: Path) -> None:
    with FakeOpenAIServer(replies=ScriptedReplies(answers=("18",))) as endpoint:
        with serving(scripted_service(endpoint, tmp_path / "runs.sqlite")) as base_url:
            client = OpenAI(base_url=base_url, api_key="unused")
            stream = client.chat.completions.create(
                model="tmas", messages=user(), stream=True, extra_body=SMALL_TMAS
            )
            chunks = list(stream)
        served = endpoint.served_usage
    reasoning = [
        c.choices[0].delta.model_extra.get("reasoning_content")
        for c in chunks
        if c.choices and c.choices[0].delta.model_extra.get("reasoning_content")
    ]
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    first_answer = next(i for i, c in enumerate(chunks) if c.choices and c.choices[0].delta.content)
    last_progress = max(
        i for i, c in enumerate(chunks)
        if c.choices and c.choices[0].delta.model_extra.get("reasoning_content")
    )  # fmt: skip
    assert sum("(initial): answer 18" in line for line in reasoning) == 2
    assert sum("check 0 of candidate" in line for line in reasoning) == 2
    assert any("vote: 18" in line for line in reasoning)
    assert last_progress < first_answer  # progress first, then the answer
    assert content.rstrip().endswith("\\boxed{18}")
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and usage_of(chunks[-1].usage) == served


def test_async_sdk_runs_concurrent_requests_each_as_its_own_run(tmp_path: Path) -> None:
    clients = 8
    with FakeOpenAIServer(replies=ScriptedReplies(answers=("18",)), latency_s=0.05) as endpoint:
        service = scripted_service(
            endpoint, tmp_path / "runs.sqlite", limits=ServeLimits(max_concurrent_runs=clients)
        )
        with serving(service) as base_url:

            async def ask_all() -> list:
                client = AsyncOpenAI(base_url=base_url, api_key="unused")
                return await asyncio.gather(*(
                    client.chat.completions.create(
                        model="majority_vote", messages=user(), extra_body={"n_candidates": 3}
                    )
                    for _ in range(clients)
                ))  # fmt: skip

            replies = asyncio.run(ask_all())
        most_in_flight = endpoint.max_in_flight
        served = endpoint.served_usage
        calls = endpoint.request_count
    run_ids = {r.model_extra["tmas"]["run_ids"][0] for r in replies}
    assert len(run_ids) == clients and calls == 3 * clients
    assert all(r.model_extra["tmas"]["final_answers"] == ["18"] for r in replies)
    assert most_in_flight > 3  # the runs overlapped: more calls at once than one run makes
    total = {
        key: sum(usage_of(r.usage)[key] for r in replies)
        for key in ("prompt_tokens", "completion_tokens")
    }
    assert total == served


def test_n_returns_independent_runs(tmp_path: Path) -> None:
    with FakeOpenAIServer() as endpoint:
        with serving(scripted_service(endpoint, tmp_path / "runs.sqlite")) as base_url:
            reply = OpenAI(base_url=base_url, api_key="unused").chat.completions.create(
                model="majority_vote", messages=user(), n=3, seed=7,
                extra_body={"n_candidates": 2},
            )  # fmt: skip
        served, calls = endpoint.served_usage, endpoint.request_count
    assert [c.index for c in reply.choices] == [0, 1, 2]
    run_ids = reply.model_extra["tmas"]["run_ids"]
    assert len(set(run_ids)) == 3 and calls == 3 * 2 and usage_of(reply.usage) == served
    storage = open_storage(tmp_path / "runs.sqlite")
    try:
        seeds = [saved_plan(storage.registry.get(run_id)).config.seed for run_id in run_ids]
    finally:
        storage.close()
    assert seeds == [7, 8, 9]  # one seed each: independent samples


def test_langchain_chat_openai_invokes_and_streams_a_topology(tmp_path: Path) -> None:
    with FakeOpenAIServer(replies=ScriptedReplies(answers=("18",))) as endpoint:
        with serving(scripted_service(endpoint, tmp_path / "runs.sqlite")) as base_url:
            chat = ChatOpenAI(
                base_url=base_url, api_key="unused", model="self_refine", stream_usage=True
            )
            message = chat.invoke("What is 9 + 9?")
            before = endpoint.served_usage
            streamed = None
            for piece in chat.stream("What is 9 + 9?"):
                streamed = piece if streamed is None else streamed + piece
        after = endpoint.served_usage
    assert message.content.rstrip().endswith("\\boxed{18}")
    assert message.usage_metadata["input_tokens"] == before["prompt_tokens"]
    assert streamed is not None and streamed.content.rstrip().endswith("\\boxed{18}")
    assert streamed.usage_metadata["output_tokens"] == (
        after["completion_tokens"] - before["completion_tokens"]
    )


@pytest.mark.parametrize("on_disconnect", ["cancel", "finish"])
def test_a_client_that_leaves_cancels_or_lets_the_run_finish(
    tmp_path: Path, on_disconnect: str
) -> None:
    with FakeOpenAIServer(latency_s=0.1) as endpoint:
        service = scripted_service(endpoint, tmp_path / "runs.sqlite", on_disconnect=on_disconnect)
        with serving(service) as base_url:
            body = {"model": "tmas", "messages": user(), "stream": True, **SMALL_TMAS}
            with httpx.stream("POST", f"{base_url}/chat/completions", json=body) as response:
                run_id = response.headers["x-tmas-run-id"]
                next(response.iter_lines())  # the first chunk: the run has started
            status = "running"
            for _ in range(200):
                status = httpx.get(f"{base_url}/runs/{run_id}").json()["status"]
                if status not in ("starting", "running"):
                    break
                asyncio.run(asyncio.sleep(0.05))
        calls = endpoint.request_count
    if on_disconnect == "cancel":
        assert status == "cancelled" and calls < SMALL_TMAS_CALLS
    else:
        assert status == "finished" and calls == SMALL_TMAS_CALLS


def test_the_service_streams_without_http(tmp_path: Path) -> None:
    with FakeOpenAIServer(replies=ScriptedReplies(answers=("18",))) as endpoint:
        service = scripted_service(endpoint, tmp_path / "runs.sqlite")

        async def collect() -> list[dict]:
            body = {"model": "tmas", "messages": user(), **SMALL_TMAS}
            return [chunk async for chunk in service.stream(body)]

        try:
            chunks = asyncio.run(collect())
        finally:
            service.close()
        served = endpoint.served_usage
    last = chunks[-1]
    assert last["usage"]["prompt_tokens"] == served["prompt_tokens"]
    assert last["tmas"]["final_answers"] == ["18"] and last["tmas"]["calls"] == SMALL_TMAS_CALLS
