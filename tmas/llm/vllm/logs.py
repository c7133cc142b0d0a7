"""Where vLLM's own output goes: a log file per engine or server, so the terminal shows the
run's progress and answers (and ``--json`` output stays parseable) while the engine's
hundreds of start-up lines stay available for a look when something fails."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tmas.llm.model_files import default_cache_dir


def log_dir() -> Path:
    """The folder of engine and server logs: ``logs`` beside the model cache.

    Example:
        >>> log_dir().name
        'logs'
    """
    return default_cache_dir().parent / "logs"


def new_log_path(prefix: str) -> Path:
    """A fresh log file name for this process (the folder is created).

    Example:
        >>> new_log_path("vllm-engine").name.startswith("vllm-engine-")
        True
    """
    folder = log_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return folder / f"{prefix}-{stamp}-{os.getpid()}-{time.monotonic_ns() % 10**6}.log"


@contextmanager
def captured_output(path: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (file descriptors 1 and 2, so C libraries and
    child processes started in the block too) to ``path`` for the block. Child processes
    keep writing there after the block.

    Example:
        >>> import tempfile
        >>> log = Path(tempfile.mkdtemp()) / "out.log"
        >>> with captured_output(log):
        ...     _ = os.write(1, b"hidden\\n")
        >>> log.read_text()
        'hidden\\n'
    """
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with path.open("ab") as log:
        try:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def send_vllm_logs_to(path: Path) -> None:
    """Send the ``vllm`` logger's records to ``path`` instead of its console handlers (vLLM
    logs to stdout by default, which would mix with a command's own output)."""
    import vllm.logger  # noqa: F401 - configures the vllm logger

    logger = logging.getLogger("vllm")
    consoles = [
        handler
        for handler in logger.handlers
        if isinstance(handler, logging.StreamHandler)
        and not isinstance(handler, logging.FileHandler)
    ]
    if not consoles:
        return
    to_file = logging.FileHandler(path, encoding="utf-8")
    to_file.setFormatter(consoles[0].formatter)
    to_file.setLevel(consoles[0].level)
    for handler in consoles:
        logger.removeHandler(handler)
    logger.addHandler(to_file)
