"""The package's own OpenAI-compatible client: what it sends, what it reads, and each fault the
fault server injects raised as the same kind of error (transient, fatal) as LangChain's
ChatOpenAI raises, sync and async, through the router and alone."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from tmas.llm.endpoint import EndpointChatModel
from tmas.llm.errors import ModelCallError, is_transient
from tmas.llm.openai_compat import make_endpoint_model
from tmas.llm.router import ModelCall, ModelRouter
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.fault_server import FaultInjectingServer

ASK = [("system", "Solve it."), ("human", "What is 1 + 1?")]
AS_SOLVER: dict = {"metadata": {"tmas_role": "solver", "tmas_prompt": "solver/user"}}
TIMEOUT_S = 0.5
SEED_FAILING_FIRST = 3  # the server draws a fault three times, then answers
SOLVER_HEADERS = {"X-TMAS-Role": "solver"}
SECRET = "sk-test-do-not-print-1234567890"


def endpoint(url: str, **settings: object) -> EndpointChatModel:
    values: dict = {"model": "scripted", "max_tokens": 32, "temperature": 0.0, "timeout": TIMEOUT_S}
    values.update(settings)
    return make_endpoint_model(base_url=url, **values)


def test_a_call_sends_role_headers_both_limits_and_the_seed_and_reads_usage() -> None:
    with FakeOpenAIServer() as server:
        reply = endpoint(server.base_url).invoke(ASK, config=AS_SOLVER, seed=7)
        body = server.requests[-1]
    assert (body["max_tokens"], body["max_completion_tokens"], body["seed"]) == (32, 32, 7)
    assert body["messages"][0] == {"role": "system", "content": "Solve it."}
    assert body["tmas"] == {"role": "solver", "prompt": "solver/user"}
    assert "boxed" in reply.content
    usage = reply.usage_metadata
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0


def test_the_router_calls_it_directly_sync_and_async_with_the_roles_settings() -> None:
    with FakeOpenAIServer() as server:
        router = ModelRouter(endpoint(server.base_url), max_parallel_calls=2)
        done = router.complete("verifier", "You verify.", "check 18", 24, 3, prompt="verifier/user")
        call = ModelCall("solver", "You solve.", "What is 9 + 9?", 16, 4)
        awaited = asyncio.run(_call_and_close(router, call))
        first, second = server.requests[-2:]
    assert "Verdict" in done.text and done.output_tokens > 0
    assert first["tmas"] == {"role": "verifier", "prompt": "verifier/user"}
    assert first["max_tokens"] == 24
    assert first["temperature"] == router.temperature_for("verifier")
    assert "18" in awaited.text and second["seed"] == 4


async def _call_and_close(router: ModelRouter, call: ModelCall):
    try:
        return await router.acall(call)
    finally:
        await router.aclose()


def test_streaming_yields_the_text_and_then_the_usage() -> None:
    # LangChain does not hand a stream its run's metadata: the role goes as headers= instead
    with FakeOpenAIServer() as server:
        chunks = list(endpoint(server.base_url).stream(ASK, headers=SOLVER_HEADERS))
        streamed = asyncio.run(_astream(endpoint(server.base_url)))
        assert server.requests[-1]["tmas"]["role"] == "solver"
    text = "".join(chunk.content for chunk in chunks)
    assert "boxed" in text and text == "".join(chunk.content for chunk in streamed)
    assert any(chunk.usage_metadata for chunk in chunks)


async def _astream(model: EndpointChatModel) -> list:
    try:
        return [chunk async for chunk in model.astream(ASK, headers=SOLVER_HEADERS)]
    finally:
        await model.aclose()


@pytest.mark.parametrize("kind", ["http_500", "http_429", "timeout", "drop", "malformed"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_each_failing_kind_is_a_transient_error(kind: str, mode: str) -> None:
    with FaultInjectingServer({kind: 1.0}, hold_s=3.0, retry_after_s=2) as server:
        router = ModelRouter(endpoint(server.base_url))
        call = ModelCall("solver", "Solve it.", "What is 1 + 1?", 16, 0)
        started = time.monotonic()
        with pytest.raises(ModelCallError) as raised:
            if mode == "sync":
                router.call(call)
            else:
                asyncio.run(_call_and_close(router, call))
        assert time.monotonic() - started < 2.0  # a held request ends at the client's timeout
        assert server.injected[kind] == 1 and server.ok_count == 0
    error = raised.value
    assert error.transient and error.fatal is None and is_transient(error.__cause__)
    assert error.retry_after_s == (2.0 if kind == "http_429" else None)


@pytest.mark.parametrize(
    ("server_settings", "cause"),
    [
        ({"api_key": "right"}, "rejected the API key (HTTP 401)"),
        ({"served_models": ("other",)}, "does not know this model or path (HTTP 404)"),
        ({"max_context_tokens": 2}, "does not fit the model's context"),
    ],
)
def test_settings_to_fix_are_fatal_and_named(server_settings: dict, cause: str) -> None:
    with FakeOpenAIServer(**server_settings) as server:
        router = ModelRouter(endpoint(server.base_url))
        with pytest.raises(ModelCallError) as raised:
            router.complete("solver", "Solve it.", "What is one plus one, please?", 16, 0)
    assert cause in str(raised.value) and raised.value.fatal and not raised.value.transient


def test_its_own_retries_ride_out_a_fault_when_asked() -> None:
    with FaultInjectingServer(
        {"http_500": 0.6}, seed=SEED_FAILING_FIRST, retry_after_s=0
    ) as server:
        reply = endpoint(server.base_url, max_retries=4).invoke(ASK, config=AS_SOLVER)
        assert server.injected["http_500"] == 3 and server.ok_count == 1
    assert "boxed" in reply.content


def test_the_key_is_sent_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", SECRET)
    with FakeOpenAIServer(api_key=SECRET) as server:
        model = make_endpoint_model(
            base_url=server.base_url, model="scripted", api_key_env="MY_KEY", max_tokens=8,
            temperature=0.0,
        )  # fmt: skip
        assert "boxed" in model.invoke(ASK, config=AS_SOLVER).content
    assert SECRET not in repr(model) and SECRET not in model.model_dump_json()


def test_bad_settings_are_refused_at_once() -> None:
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        endpoint("http://127.0.0.1:9/v1", timeout=float("inf"))
    with pytest.raises(ValueError, match="max_retries must be 0 or more"):
        endpoint("http://127.0.0.1:9/v1", max_retries=-1)


def test_a_garbled_reply_without_choices_is_transient() -> None:
    from tmas.llm.openai_wire import read_reply

    with pytest.raises(json.JSONDecodeError) as raised:
        read_reply({"error": "overloaded"})
    assert is_transient(raised.value)


def test_a_bound_model_keeps_its_arguments_on_the_async_path() -> None:
    with FakeOpenAIServer() as server:
        bound = endpoint(server.base_url).bind(stop=["never"])
        router = ModelRouter(bound)  # type: ignore[arg-type]
        asyncio.run(_call_and_close(router, ModelCall("solver", "Solve.", "9 + 9?", 16, 0)))
        assert server.requests[-1]["stop"] == ["never"]


def test_copies_have_their_own_connections_and_direct_calls_leave_none_open() -> None:
    with FakeOpenAIServer() as server:
        model = endpoint(server.base_url)
        copy = model.model_copy()
        assert copy.invoke(ASK, headers=SOLVER_HEADERS).content
        copy.close()
        assert model.invoke(ASK, headers=SOLVER_HEADERS).content  # the copy closed only its own
        for _ in range(2):  # each on a new loop: LangChain's async calls use their own session
            assert asyncio.run(model.ainvoke(ASK, headers=SOLVER_HEADERS)).content
        assert model._sessions == {}  # noqa: SLF001 - nothing left open to leak
        assert server.requests[-1]["tmas"]["role"] == "solver"


def test_an_error_in_the_middle_of_a_stream_is_raised_not_swallowed() -> None:
    from tmas.llm.openai_wire import EndpointStatusError, stream_event

    with pytest.raises(EndpointStatusError) as raised:
        stream_event('data: {"error": {"message": "engine died"}}')
    assert is_transient(raised.value)
