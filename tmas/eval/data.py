"""Loading evaluation problems: JSONL, CSV, parquet (with pyarrow), and the bundled samples."""

from __future__ import annotations

import csv
import json
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator


class DataError(ValueError):
    """A data file cannot be read or a row lacks what a problem needs."""


class Problem(BaseModel):
    """One evaluation problem."""

    model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)

    id: str
    problem: str
    answer: str
    solution: str | None = None
    """A reference solution, when the data has one (training targets)."""
    kind: str | None = None
    """The problem's family, when generated from templates (deduplication reads it)."""

    @field_validator("id", "problem", "answer")
    @classmethod
    def _utf8(cls, value: str) -> str:
        value.encode("utf-8")  # a lone surrogate (JSON "\\ud800") raises: not text
        return value


SAMPLES = ("gsm8k", "math500", "proofs")


def sample_path(name: str) -> Path:
    """The bundled sample ``gsm8k`` or ``math500`` (20 problems each), or ``proofs`` (proof
    problems with reference proofs); see ``samples/README.md`` for sources and licences."""
    return Path(str(resources.files("tmas.eval") / "samples" / f"{name}.jsonl"))


def _rows(path: Path) -> list[dict[str, Any]]:
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            with path.open(encoding="utf-8") as handle:
                return [json.loads(line) for line in handle if line.strip()]
        if suffix == ".csv":
            with path.open(encoding="utf-8", newline="") as handle:
                return list(csv.DictReader(handle))
        if suffix == ".parquet":
            try:
                import pyarrow.parquet as pq
            except ImportError:
                raise DataError("reading parquet needs pyarrow: pip install pyarrow") from None
            return pq.read_table(path).to_pylist()
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, csv.Error) as exc:
        raise DataError(f"cannot read {path}: {exc}") from None
    raise DataError(f"unknown data format {suffix!r}: use .jsonl, .csv or .parquet")


def load_problems(source: str, limit: int | None = None, *, proof: bool = False) -> list[Problem]:
    """Problems from a file or a bundled sample name, validated, ids unique. Proof problems
    (``proof``) need a reference ``solution`` instead of an ``answer``.

    Example:
        >>> [p.id for p in load_problems("gsm8k", limit=2)]
        ['gsm8k-test-0', 'gsm8k-test-1']
        >>> load_problems("proofs", limit=1, proof=True)[0].solution is not None
        True
    """
    path = sample_path(source) if source in SAMPLES else Path(source)
    if not path.exists():
        raise DataError(f"no such data file: {source} (or use a sample: {', '.join(SAMPLES)})")
    problems = []
    for number, row in enumerate(_rows(path)[: limit if limit else None], start=1):
        if proof:
            if not isinstance(row.get("solution"), str) or not row["solution"].strip():
                raise DataError(f"{path.name} row {number}: a proof problem needs a reference "
                                "'solution'")  # fmt: skip
            row = {"answer": "", **row}
        try:
            problems.append(Problem.model_validate(row))
        except ValidationError as exc:
            fields = ", ".join(str(e["loc"][0]) for e in exc.errors())
            raise DataError(f"{path.name} row {number}: missing or bad {fields}") from None
        if not problems[-1].problem.strip():
            raise DataError(f"{path.name} row {number}: empty problem")
    ids = [p.id for p in problems]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise DataError(f"{path.name}: duplicate ids {', '.join(duplicates[:5])}")
    return problems
