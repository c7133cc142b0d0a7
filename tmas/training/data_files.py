"""Training rows on disk: verl-compatible parquet or JSONL, written whole or not at all, and
read back with a check of the columns training needs."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

SUFFIXES = (".parquet", ".jsonl")
SOURCES = ("normal", "experience", "guideline")


class DataFileError(ValueError):
    """A training data file that cannot be read or lacks what training needs."""


def check_suffix(path: Path) -> None:
    """Refuse a file name that is neither ``.parquet`` nor ``.jsonl``.

    Example:
        >>> check_suffix(Path("rows.csv"))
        Traceback (most recent call last):
        ...
        tmas.training.data_files.DataFileError: rows.csv: expected a .parquet or .jsonl file
    """
    if path.suffix not in SUFFIXES:
        raise DataFileError(f"{path}: expected a .parquet or .jsonl file")


def replace_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write`` on a temporary file beside ``path`` and rename it into place, so a reader
    (or a process killed half-way) never leaves half a file at ``path``.

    Example:
        >>> out = Path(tempfile.mkdtemp()) / "note.txt"
        >>> replace_atomically(out, lambda tmp: tmp.write_text("done")); out.read_text()
        'done'
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(handle)
    try:
        write(Path(temporary))
        os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)


def write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """Write ``rows`` to ``path`` (parquet or JSONL by its suffix), whole or not at all.

    Example:
        >>> out = Path(tempfile.mkdtemp()) / "rows.jsonl"
        >>> write_rows([{"a": 1}], out); out.read_text()
        '{"a": 1}\\n'
    """
    check_suffix(path)

    def write(temporary: Path) -> None:
        if path.suffix == ".parquet":
            _write_parquet(rows, temporary)
        else:
            temporary.write_text(
                "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                encoding="utf-8",
            )

    replace_atomically(path, write)


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise DataFileError("writing parquet needs pyarrow: pip install 'tmas[train]'") from exc
    pq.write_table(pa.Table.from_pylist(rows), path)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a parquet or JSONL training file, each checked for a chat ``prompt``, a
    ``_source`` of the hybrid scheme and a ``reward_model.ground_truth``.

    Example:
        >>> bad = Path(tempfile.mkdtemp()) / "rows.jsonl"
        >>> _ = bad.write_text('{"prompt": "hi"}\\n')
        >>> read_rows(bad)
        Traceback (most recent call last):
        ...
        tmas.training.data_files.DataFileError: ...rows.jsonl row 1: prompt must be a list of \
chat messages; missing _source; missing reward_model.ground_truth
    """
    check_suffix(path)
    if not path.is_file():
        raise DataFileError(f"{path}: no such file")
    try:
        rows = _read_parquet(path) if path.suffix == ".parquet" else _read_jsonl(path)
    except (OSError, ValueError) as exc:
        raise DataFileError(f"{path}: cannot read it ({exc})") from None
    if not rows:
        raise DataFileError(f"{path}: no rows")
    for number, row in enumerate(rows, start=1):
        problems = row_problems(row)
        if problems:
            raise DataFileError(f"{path} row {number}: {'; '.join(problems)}")
    return [uniform_row(row) for row in rows]


def uniform_row(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with the columns the reward reads in one shape for every row (a table takes
    its column types from the rows): the gold answer as text, and ``extra_info`` with the
    problem, the guideline items and the experience items.

    Example:
        >>> uniform_row({"reward_model": {"ground_truth": 7}})["reward_model"]["ground_truth"]
        '7'
    """
    extra = dict(row.get("extra_info") or {})
    extra["problem"] = str(extra.get("problem") or "")
    for key in ("guidelines", "experiences"):
        extra[key] = [str(item) for item in extra.get(key) or []]
    reward_model = dict(row.get("reward_model") or {})
    reward_model["ground_truth"] = str(reward_model.get("ground_truth", ""))
    return {**row, "reward_model": reward_model, "extra_info": extra}


def row_problems(row: Any) -> list[str]:
    """What a training row lacks (empty when it is usable).

    Example:
        >>> row_problems({"prompt": [{"role": "user", "content": "1+1?"}], "_source": "normal",
        ...               "reward_model": {"ground_truth": "2"}})
        []
    """
    if not isinstance(row, dict):
        return ["expected an object"]
    problems = []
    prompt = row.get("prompt")
    if not isinstance(prompt, list) or not all(
        isinstance(m, dict) and "role" in m and "content" in m for m in prompt
    ):
        problems.append("prompt must be a list of chat messages")
    if "_source" not in row:
        problems.append("missing _source")
    elif row["_source"] not in SOURCES:
        problems.append(f"_source {row['_source']!r} is not one of {', '.join(SOURCES)}")
    truth = (row.get("reward_model") or {}).get("ground_truth")
    if truth in (None, ""):
        problems.append("missing reward_model.ground_truth")
    extra = row.get("extra_info")
    if row.get("_source") == "guideline" and not (
        isinstance(extra, dict) and isinstance(extra.get("guidelines"), list)
    ):
        problems.append("a guideline row needs extra_info.guidelines (the bank it was shown)")
    return problems


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"line {number} is not JSON: {exc.msg}") from None
    return rows


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise DataFileError("reading parquet needs pyarrow: pip install 'tmas[train]'") from exc
    return pq.read_table(path).to_pylist()
