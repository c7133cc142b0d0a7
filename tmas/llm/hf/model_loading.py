"""Loading a transformers causal LM (and optionally a LoRA adapter) once per process.

A bundled model (``smollm2``, ``qwen``) or a ``.gguf`` file is first turned into a plain
checkpoint (:mod:`tmas.llm.checkpoints`). An adapter is checked against the base before it is
loaded: the record :mod:`tmas.training` saves beside it names the base's shape, and an adapter
for another base is refused with one line.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tmas.llm.model_files import ModelFileError

INSTALL_HINT = "pip install 'tmas[train]'"
ADAPTER_RECORD = "tmas_adapter.json"
SHAPE_KEYS = ("model_type", "hidden_size", "num_hidden_layers", "vocab_size")


class AdapterMismatchError(ModelFileError):
    """A LoRA adapter that was trained on another base model."""


@dataclass
class LoadedModel:
    """A model, its tokenizer and the lock that serialises generation on its device (every
    model on one device shares it: two models decoding at once on a CPU would only share its
    cores, and a batch waiting for the lock takes in more calls)."""

    model: Any
    tokenizer: Any
    checkpoint: str
    adapter: str | None
    device: str
    lock: threading.Lock


_loaded: dict[tuple[str, str | None, str], LoadedModel] = {}
_loading = threading.Lock()
_device_locks: dict[str, threading.Lock] = {}


def model_shape(config: Any) -> dict[str, Any]:
    """The fields of a transformers config that an adapter depends on.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> model_shape(NS(model_type="llama", hidden_size=576, num_hidden_layers=30,
        ...     vocab_size=49152))["hidden_size"]
        576
    """
    return {key: getattr(config, key, None) for key in SHAPE_KEYS}


def adapter_folder(path: str | Path) -> Path:
    """The LoRA adapter folder ``path`` names: the folder itself, or the ``adapter/`` inside a
    training's output folder (what ``tmas train ... --out`` names).

    Example:
        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp())
        >>> (out / "adapter").mkdir(); (out / "adapter" / "adapter_config.json").write_text("{}")
        2
        >>> adapter_folder(out) == out / "adapter"
        True
    """
    folder = Path(path).expanduser()
    inside = folder / "adapter"
    marker = "adapter_config.json"
    if not (folder / marker).is_file() and (inside / marker).is_file():
        return inside
    return folder


def check_adapter(adapter: Path, base_shape: dict[str, Any] | None, base_name: str) -> None:
    """Refuse an adapter folder that is missing, not a PEFT adapter, or made for a base of
    another shape than ``base_shape`` (not compared when None).

    Example:
        >>> check_adapter(Path("/no/such/adapter"), {}, "smollm2")
        Traceback (most recent call last):
        ...
        tmas.llm.hf.model_loading.AdapterMismatchError: adapter /no/such/adapter is not a ...
    """
    if not (adapter / "adapter_config.json").is_file():
        raise AdapterMismatchError(
            f"adapter {adapter} is not a LoRA adapter folder (no adapter_config.json)"
        )
    record_path = adapter / ADAPTER_RECORD
    if base_shape is None or not record_path.is_file():
        return
    record = json.loads(record_path.read_text())
    trained_on = record.get("base_shape", {})
    differing = [k for k in SHAPE_KEYS if k in trained_on and trained_on[k] != base_shape.get(k)]
    if differing:
        raise AdapterMismatchError(
            f"adapter {adapter} was trained on {record.get('base_model', 'another model')}, "
            f"not on {base_name} ({', '.join(differing)} differ)"
        )


DEVICE_PATTERN = r"^(auto|cpu|mps|cuda(:[0-9]+)?)$"


def pick_device(device: str | None) -> str:
    """``cuda`` when ``auto``/None finds a GPU, else ``cpu``; a named device as it is, once
    torch can use it (ModelFileError otherwise).

    Example:
        >>> pick_device("cpu")
        'cpu'
    """
    import torch

    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ModelFileError(f"--device {device}: this torch build sees no CUDA GPU")
    return str(device)


def load_model(
    model: str | None, adapter: str | None = None, device: str | None = None
) -> LoadedModel:
    """The process's copy of ``model`` (a checkpoint folder, hub id, ``.gguf`` file or bundled
    name) with ``adapter`` applied, loaded on first use; float32 on CPU.

    Example (with ``tmas[train]``)::

        loaded = load_model("smollm2")
        loaded.tokenizer.eos_token
    """
    from tmas.llm.checkpoints import checkpoint_for

    adapter_path = str(adapter_folder(adapter).resolve()) if adapter else None
    if adapter_path is not None:
        check_adapter(Path(adapter_path), None, model or "default")  # before any weights load
    checkpoint = checkpoint_for(model)
    where = pick_device(device)
    key = (checkpoint, adapter_path, where)
    with _loading:
        if key not in _loaded:
            _loaded[key] = _load(checkpoint, model or checkpoint, adapter_path, where)
        return _loaded[key]


def load_base(checkpoint: str, name: str, device: str, score_head: bool = False) -> tuple[Any, Any]:
    """A checkpoint's model (float32 on CPU, its own dtype elsewhere) and tokenizer (with a pad
    token), without moving the model; ModelFileError when it cannot be loaded. With
    ``score_head`` the model ends in one scalar score instead of the token logits (a reward
    model; the head starts untrained).

    Example (with ``tmas[train]``)::

        model, tokenizer = load_base(checkpoint_for("smollm2"), "smollm2", "cpu")
    """
    try:
        import torch
        from transformers import (
            AutoModelForCausalLM,
            AutoModelForSequenceClassification,
            AutoTokenizer,
        )
        from transformers.utils import logging as transformers_logging
    except ImportError as exc:
        raise ModelFileError(f"{exc.name} is not installed: {INSTALL_HINT}") from exc
    transformers_logging.disable_progress_bar()  # the weights' loading bar
    dtype = torch.float32 if device == "cpu" else "auto"
    try:
        tokenizer = AutoTokenizer.from_pretrained(checkpoint)
        if score_head:
            model = AutoModelForSequenceClassification.from_pretrained(
                checkpoint, dtype=dtype, num_labels=1
            )
        else:
            model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=dtype)
    except OSError as exc:
        raise ModelFileError(f"cannot load model {name}: {first_line(exc)}") from exc
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if score_head:  # the score is read at the last token that is not padding
        model.config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def _load(checkpoint: str, name: str, adapter: str | None, device: str) -> LoadedModel:
    base, tokenizer = load_base(checkpoint, name, device)
    loaded: Any = base
    if adapter is not None:
        check_adapter(Path(adapter), model_shape(base.config), name)
        try:
            from peft import PeftModel
        except ImportError as exc:
            raise ModelFileError(f"loading an adapter needs peft: {INSTALL_HINT}") from exc
        try:
            loaded = PeftModel.from_pretrained(base, adapter)
        except (RuntimeError, ValueError, KeyError) as exc:
            raise AdapterMismatchError(
                f"adapter {adapter} does not fit {name}: {first_line(exc)}"
            ) from exc
    try:
        loaded.to(device)
    except (RuntimeError, AssertionError) as exc:
        raise ModelFileError(f"cannot use device {device}: {first_line(exc)}") from exc
    loaded.eval()
    lock = _device_locks.setdefault(device, threading.Lock())  # called holding _loading
    return LoadedModel(loaded, tokenizer, checkpoint, adapter, device, lock)


def first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's message.

    Example:
        >>> first_line(OSError("\\nno such model\\nmore"))
        'no such model'
    """
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
