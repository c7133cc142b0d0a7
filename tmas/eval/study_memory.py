"""Lifelong memory in a study. A condition that remembers (its ``memory`` setting names a
namespace) gets one namespace per arm, the condition's name for it followed by the condition
and the seed, so seeds and conditions never share what they learnt; a condition's
``memory_import`` file (items as ``tmas memory export`` writes them) seeds the arm's namespace
before its first problem: the hand-written lessons of an upper bound, for example. Problems of
an arm run one after another in the study's order (the study runs one problem at a time).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tmas.eval.study_file import StudyError
from tmas.lifecycle.run_database import open_runs
from tmas.memory.lifelong import LifelongMemory, LifelongMemoryError


def arm_namespace(namespace: str, condition: str, seed: int) -> str:
    """The memory namespace of one arm.

    Example:
        >>> arm_namespace("traps", "memory_on", 2)
        'traps-memory_on-seed-2'
    """
    return f"{namespace}-{condition}-seed-{seed}"


def read_items(path: Path) -> list[dict[str, Any]]:
    """The memory items of a JSONL file; StudyError naming what is wrong.

    Example:
        >>> read_items(Path("/no/such.jsonl"))
        Traceback (most recent call last):
        ...
        tmas.eval.study_file.StudyError: memory_import: cannot read /no/such.jsonl (No such file \
or directory)
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
    except OSError as exc:
        raise StudyError(f"memory_import: cannot read {path} ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StudyError(f"memory_import: {path} is not JSON lines ({exc})") from None
    if not rows or not all(isinstance(row, dict) for row in rows):
        raise StudyError(f"memory_import: {path}: one memory item (a JSON object) per line")
    return rows


def seed_memory(db: Path, namespace: str, rows: list[dict[str, Any]]) -> int:
    """Put ``rows`` into the memory ``namespace`` of the run database ``db`` unless it holds
    items already (a rerun keeps what the arm learnt); how many were put.

    Example:
        >>> import tempfile, time
        >>> db = Path(tempfile.mkdtemp()) / "runs.sqlite"
        >>> item = {"id": "l1", "kind": "experience", "type": "pitfall", "text": "Count gaps.",
        ...         "hits": 0, "uses": 0, "runs": [], "created_at": time.time()}
        >>> seed_memory(db, "m-a-seed-0", [item]), seed_memory(db, "m-a-seed-0", [item])
        (1, 0)
    """
    storage = open_runs(db, for_writing=True)
    try:
        memory = LifelongMemory(storage.store(), namespace)
        if memory.items():
            return 0
        try:
            return memory.import_items(rows)
        except LifelongMemoryError as exc:
            raise StudyError(f"memory_import: {exc}") from None
    finally:
        storage.close()
