"""Files and folders as settings compare them: by content, not by path.

A run's or a training's settings name a LoRA adapter, a data file or a topology file by path;
what decides the results is what lies there. A content key (``sha256:`` and 16 hex digits of
the file's bytes, or of a folder's file names and bytes) is the same for the same content
moved or copied (a study folder taken to another machine), and differs for an adapter
retrained or a data file rewritten in place.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from tmas.llm.hf.model_loading import adapter_folder

CONTENT_KEY = "sha256:"
"""How a content key starts."""


def content_key(path: str) -> str:
    """The content key of the file or folder at ``path`` (a training's output folder stands for
    the ``adapter/`` inside it); ``path`` as it is when nothing is there, or when it is a key
    already.

    Example:
        >>> import shutil, tempfile
        >>> folder = Path(tempfile.mkdtemp()) / "adapter"
        >>> folder.mkdir()
        >>> _ = (folder / "adapter_config.json").write_text("{}")
        >>> _ = (folder / "adapter_model.safetensors").write_bytes(b"weights")
        >>> key = content_key(str(folder))
        >>> key.startswith("sha256:"), content_key(shutil.copytree(folder, f"{folder}2")) == key
        (True, True)
        >>> content_key(str(folder.parent)) == key  # a training's folder names its adapter/
        True
        >>> content_key(str(folder / "adapter_config.json")) == content_key(str(folder)), key
        (False, ...)
        >>> content_key("/no/such/adapter"), content_key(key) == key
        ('/no/such/adapter', True)
    """
    if path.startswith(CONTENT_KEY):
        return path
    found = Path(path).expanduser()
    if found.is_file():
        return _digest(str(found), ((found.name, *_stamp(found)),), folder=False)
    folder = adapter_folder(found)
    if not folder.is_dir():
        return path
    files = sorted(f for f in folder.rglob("*") if f.is_file())
    return _digest(
        str(folder), tuple((f.relative_to(folder).as_posix(), *_stamp(f)) for f in files)
    )


def _stamp(file: Path) -> tuple[int, int]:
    """A file's size and modification time: its content key is read again when either moves."""
    status = file.stat()
    return status.st_size, status.st_mtime_ns


@functools.lru_cache(maxsize=64)
def _digest(place: str, listing: tuple[tuple[str, int, int], ...], folder: bool = True) -> str:
    """The key of the file ``place``, or of the files of folder ``place`` (names and bytes)."""
    digest = hashlib.sha256()
    for name, _, _ in listing:
        if folder:
            digest.update(f"{name}\0".encode())
        digest.update((Path(place) / name if folder else Path(place)).read_bytes())
    return CONTENT_KEY + digest.hexdigest()[:16]
