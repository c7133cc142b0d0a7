"""Wiring of the vLLM backends without vLLM: option handling, start-failure lines, the chat
model's mapping of requests and usage on a fake engine, and backend settings."""

from __future__ import annotations

import concurrent.futures
import threading
from types import SimpleNamespace as NS
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from tmas.cli.inputs import ConfigError, engine_args
from tmas.graphs.run_plan import revised_backend
from tmas.llm.backend import BackendSpec
from tmas.llm.vllm import chat as chat_module
from tmas.llm.vllm.chat import ChatVLLM
from tmas.llm.vllm.options import RESOURCE_OPTIONS, check_option_names, engine_options
from tmas.llm.vllm.start_failures import explain_start_failure


class FakeEngine:
    """Answers each request with its prompt length; records what it was sent."""

    def __init__(self, hold: threading.Event | None = None) -> None:
        self.requests: list[tuple[list[int], dict[str, Any]]] = []
        self.cancelled: list[concurrent.futures.Future] = []
        self.hold = hold
        self._pool = concurrent.futures.ThreadPoolExecutor(4)

    def prompt_ids(self, conversation: list[dict[str, str]]) -> list[int]:
        return [len(turn["content"]) for turn in conversation]

    def submit(self, ids: list[int], sampling: dict[str, Any]) -> concurrent.futures.Future:
        self.requests.append((ids, sampling))

        def answer() -> Any:
            if self.hold is not None:
                self.hold.wait(5)
            choices = [
                NS(text=f"answer {i}", token_ids=[1] * (i + 2), finish_reason="stop")
                for i in range(sampling["n"])
            ]
            return NS(prompt_token_ids=ids * 3, num_cached_tokens=2, outputs=choices)

        future = self._pool.submit(answer)
        original_cancel = future.cancel

        def cancel() -> bool:
            self.cancelled.append(future)
            return original_cancel()

        future.cancel = cancel  # type: ignore[method-assign]
        return future


@pytest.fixture
def fake_engine(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    engine = FakeEngine()
    monkeypatch.setattr(chat_module, "shared_engine", lambda options: engine)
    return engine


def test_chat_maps_sampling_and_usage(fake_engine: FakeEngine) -> None:
    chat = ChatVLLM(model="m", max_tokens=32, temperature=0.5, seed=3)
    reply = chat.invoke([SystemMessage("sys"), HumanMessage("hello")], max_tokens=8, seed=11)
    ids, sampling = fake_engine.requests[0]
    assert ids == [3, 5]
    assert sampling == {"n": 1, "max_tokens": 8, "temperature": 0.5, "top_p": 0.95, "seed": 11}
    assert reply.content == "answer 0"
    assert reply.usage_metadata == {
        "input_tokens": 6,
        "output_tokens": 2,
        "total_tokens": 8,
        "input_token_details": {"cache_read": 2},
    }


def test_n_choices_count_the_prompt_once(fake_engine: FakeEngine) -> None:
    result = ChatVLLM(model="m", n=3)._generate([HumanMessage("hi")], stop=["END"])
    generations = result.generations
    assert [g.text for g in generations] == ["answer 0", "answer 1", "answer 2"]
    assert [g.message.usage_metadata["input_tokens"] for g in generations] == [3, 0, 0]
    assert fake_engine.requests[0][1]["stop"] == ["END"]
    assert result.llm_output["token_usage"]["completion_tokens"] == 2 + 3 + 4


def test_timeout_cancels_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    hold = threading.Event()
    engine = FakeEngine(hold)
    monkeypatch.setattr(chat_module, "shared_engine", lambda options: engine)
    with pytest.raises(TimeoutError, match="longer than 0.2 s"):
        ChatVLLM(model="m", timeout_s=0.2).invoke("hi")
    hold.set()
    assert len(engine.cancelled) == 1


def test_async_calls_are_cancelled_with_their_task(fake_engine: FakeEngine) -> None:
    import asyncio

    fake_engine.hold = threading.Event()

    async def cancel_one() -> None:
        task = asyncio.ensure_future(ChatVLLM(model="m").ainvoke("hi"))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_one())
    fake_engine.hold.set()
    assert len(fake_engine.requests) == 1
    assert len({id(future) for future in fake_engine.cancelled}) == 1


def test_engine_options_defaults_and_overrides() -> None:
    cpu = engine_options("/ckpt", {"dtype": "float32"}, 2048, on_cpu=True)
    assert cpu == {
        "model": "/ckpt",
        "enable_prefix_caching": True,
        "disable_log_stats": True,
        "max_model_len": 2048,
        "gpu_memory_utilization": 0.3,
        "enforce_eager": True,
        "enable_chunked_prefill": False,
        "dtype": "float32",
        "max_num_batched_tokens": 4096,
    }
    long = engine_options("/ckpt", {}, 8192, on_cpu=True)
    assert long["max_num_batched_tokens"] == 8192  # the longest prompt fits one step
    assert long["dtype"] == "float32"
    assert "dtype" not in engine_options("/ckpt", {}, 8192, on_cpu=True, cpu_bf16=True)
    gpu = engine_options("/ckpt", {"enable_prefix_caching": False}, 4096, on_cpu=False)
    assert "gpu_memory_utilization" not in gpu and gpu["enable_prefix_caching"] is False
    assert "enforce_eager" not in gpu
    sized = engine_options("/ckpt", {"kv_cache_memory_bytes": 1 << 30}, 4096, on_cpu=True)
    assert "gpu_memory_utilization" not in sized


def test_unknown_options_are_named_with_a_suggestion() -> None:
    with pytest.raises(ValueError, match=r"gpu_memory_utilisation \(did you mean gpu_memory"):
        check_option_names({"gpu_memory_utilisation": 0.5}, {"gpu_memory_utilization"})


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        (
            "ValueError: Available memory (7.1 GiB) is less than desired CPU memory utilization",
            "gpu_memory_utilization=0.3",
        ),
        (
            "ValueError: To serve at least one request with the models's max seq len (8192), "
            "(0.5 GiB KV cache is needed, which is larger than the available KV cache memory",
            "lower --n-ctx",
        ),
        ("RuntimeError: operator torchvision::nms does not exist", "pip uninstall -y torchvision"),
        (
            "Traceback\nOSError: /nope is not a local folder and is not a valid model identifier",
            "--model DIR",
        ),
        (
            "TypeError: bad thing happened\nRuntimeError: Engine core initialization failed. "
            "See root cause above.",
            "TypeError: bad thing happened",
        ),
    ],
)
def test_start_failures_become_one_line(log: str, expected: str) -> None:
    line = explain_start_failure("vLLM engine for m", log, "/tmp/x.log")
    assert "\n" not in line
    assert line.startswith("vLLM engine for m did not start: ")
    assert expected in line and line.endswith("(log: /tmp/x.log)")


def test_engine_args_from_the_command_line() -> None:
    assert engine_args(
        ["max-num-seqs=4", "enforce_eager=true", 'limit_mm_per_prompt={"image": 0}'],
        gpu_memory_utilization=0.4,
        tensor_parallel_size=2,
        dtype="bfloat16",
    ) == {
        "max_num_seqs": 4,
        "enforce_eager": True,
        "limit_mm_per_prompt": {"image": 0},
        "gpu_memory_utilization": 0.4,
        "tensor_parallel_size": 2,
        "dtype": "bfloat16",
    }
    with pytest.raises(ConfigError, match="expected --engine-arg KEY=VALUE, got 'dtype'"):
        engine_args(["dtype"])


def test_backend_identity_keeps_answer_changing_options_only() -> None:
    spec = BackendSpec(
        kind="vllm",
        model="smollm2",
        n_ctx=2048,
        engine_args={"gpu_memory_utilization": 0.5, "tensor_parallel_size": 2, "dtype": "half"},
    )
    assert spec.identity() == {
        "kind": "vllm",
        "model": "smollm2",
        "n_ctx": 2048,
        "engine_args": {"dtype": "half"},
    }
    assert set(spec.engine_args) - {"dtype"} <= RESOURCE_OPTIONS
    assert BackendSpec(kind="vllm-server").resolved().model in ("smollm2", "qwen")
    with pytest.raises(ValueError, match="--engine-arg needs a vllm backend, not llamacpp"):
        BackendSpec(engine_args={"dtype": "half"})


def test_resume_merges_engine_options_into_the_saved_ones() -> None:
    saved = BackendSpec(kind="vllm", model="smollm2", engine_args={"dtype": "float32"})
    backend = revised_backend(saved, {"engine_args": {"gpu_memory_utilization": 0.2}})
    assert backend.engine_args == {"dtype": "float32", "gpu_memory_utilization": 0.2}
