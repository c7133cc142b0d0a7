"""The problems ``tmas train latent`` learns from: a problem file (``id, problem, answer`` and
optionally ``solution``), a bundled sample, or rows exported from saved runs
(``tmas export rollouts``), whose right rollouts become the reference solutions."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tmas.answers.grading import is_correct
from tmas.eval.data import load_problems
from tmas.training.data_files import DataFileError, read_rows


@dataclass(frozen=True)
class LatentExample:
    """A problem, its gold answer and, when known, a reference solution."""

    problem: str
    answer: str
    solution: str | None = None


def is_export(path: Path) -> bool:
    """Whether ``path`` holds rows exported from runs (parquet, or JSONL with a chat prompt).

    Example:
        >>> is_export(Path("rows.parquet")), is_export(Path("/no/such.jsonl"))
        (True, False)
    """
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as parquet

            return "prompt" in parquet.read_schema(path).names
        except (ImportError, OSError):
            return True  # reading it as rows then says what is wrong
    if path.suffix != ".jsonl" or not path.is_file():
        return False
    with path.open(encoding="utf-8") as lines:
        first = next((line for line in lines if line.strip()), "")
    try:
        return isinstance(json.loads(first).get("prompt"), list)
    except (ValueError, AttributeError):
        return False


def exported_examples(path: Path) -> list[LatentExample]:
    """The examples of exported rows: each right rollout as a reference solution of its
    problem, and a problem none of whose rollouts was right once, with its answer alone."""
    right: dict[str, list[LatentExample]] = {}
    gold_of: dict[str, str] = {}
    for row in read_rows(path):
        info, gold = row["extra_info"], row["reward_model"]["ground_truth"]
        problem = info.get("problem")
        if not problem:
            raise DataFileError(f"{path}: a row without extra_info.problem (re-export it)")
        gold_of.setdefault(problem, gold)
        response = info.get("response") or ""
        solutions = right.setdefault(problem, [])
        if response and is_correct(info.get("response_answer") or None, gold):
            if response not in (e.solution for e in solutions):
                solutions.append(LatentExample(problem, gold, response))
    return [
        example
        for problem, gold in gold_of.items()
        for example in right[problem] or [LatentExample(problem, gold)]
    ]


def latent_examples(source: str, limit: int | None = None) -> list[LatentExample]:
    """The examples of ``source`` (file or sample name), at most ``limit``.

    Example:
        >>> [e.answer for e in latent_examples("gsm8k", limit=2)]
        ['18', '3']
    """
    path = Path(source)
    if is_export(path):
        return exported_examples(path)[: limit or None]
    return [LatentExample(p.problem, p.answer, p.solution) for p in load_problems(source, limit)]
