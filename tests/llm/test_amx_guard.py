"""llama.cpp builds that multiply with AMX crash on the first decode (ggml-org/llama.cpp#20824):
the engine loads weights without the extra buffer types there, the serial path refuses with
the rebuild command. The build's system info is replaced to play an AMX build on any CPU."""

from __future__ import annotations

from typing import Any

import llama_cpp  # noqa: F401 - the local extra, which the test command installs
import pytest

from tmas.llm.engine import EngineSettings, LlamaEngine  # noqa: E402
from tmas.llm.engine.loaded_model import LoadedModel  # noqa: E402
from tmas.llm.engine.request import Sampling  # noqa: E402
from tmas.llm.errors import ModelCallError  # noqa: E402
from tmas.llm.llamacpp_serial import SerialLlama  # noqa: E402
from tmas.llm.model_files import smollm2_path  # noqa: E402

AMX_INFO = b"CPU : AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | OPENMP = 1 |"
PLAIN_INFO = b"CPU : AVX2 = 1 | AVX512 = 1 | OPENMP = 1 |"


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The ``use_extra_bufts`` of every model load, recorded on the way to the real loader."""
    seen: list[bool] = []
    real = llama_cpp.llama_model_load_from_file

    def recording(path: bytes, params: Any) -> Any:
        seen.append(bool(params.use_extra_bufts))
        return real(path, params)

    monkeypatch.setattr(llama_cpp, "llama_model_load_from_file", recording)
    return seen


@pytest.mark.parametrize(("info", "extra"), [(AMX_INFO, False), (PLAIN_INFO, True)])
def test_the_engine_keeps_weights_off_amx_buffers(
    monkeypatch: pytest.MonkeyPatch, loads: list[bool], info: bytes, extra: bool
) -> None:
    monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: info)
    engine = LlamaEngine(EngineSettings(str(smollm2_path()), n_ctx=256, max_sequences=1))
    try:
        assert loads == [extra]
        chat = [{"role": "user", "content": "Say hi"}]
        assert engine.complete(chat, max_tokens=4, sampling=Sampling(0.0)).output_tokens == 4
    finally:
        engine.close()


def test_extra_buffers_can_be_forced(monkeypatch: pytest.MonkeyPatch, loads: list[bool]) -> None:
    monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: PLAIN_INFO)
    settings = EngineSettings(str(smollm2_path()), n_ctx=256, max_sequences=1, extra_buffers=False)
    LoadedModel(settings).close()
    assert loads == [False]


def test_the_serial_path_refuses_an_amx_build_with_the_rebuild_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: AMX_INFO)
    serial = SerialLlama(str(smollm2_path()), n_ctx=256)
    with pytest.raises(ModelCallError, match=r"llama\.cpp#20824.*-mno-amx-int8") as raised:
        serial.complete([{"role": "user", "content": "hi"}], max_tokens=2, sampling=Sampling(0.0))
    assert raised.value.fatal  # the run stops there instead of failing every call
