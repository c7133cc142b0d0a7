"""``tmas study``: conditions side by side at equal compute, against self-consistency, with
paired intervals; ``--plan`` runs the pilot and prints what the study will cost and tell."""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from tmas.cli.common import err, error_line, fail, out
from tmas.cli.inputs import parse_pairs
from tmas.eval.evaluation import EvaluationStopped
from tmas.llm.model_files import ModelFileError
from tmas.storage import StorageError
from tmas.terminal import plain


class StudyProgress:
    """One line per finished problem run: condition, problem, right or wrong, tokens."""

    def __init__(self, quiet: bool) -> None:
        self.quiet, self.done = quiet, 0

    def __call__(self, label: str, row: dict[str, Any]) -> None:
        self.done += 1
        if self.quiet:
            return
        verdict = "failed" if row["status"] == "failed" else "wrong"
        verdict = "right" if row["correct"] else verdict
        err.print(
            f"[{self.done}] {plain(label, 40)} {plain(row['id'], 40)}: {verdict}, "
            f"{row['tokens_in'] + row['tokens_out']:,} tokens, {row['wall_s'] or 0:.1f} s",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def progress_line(line: str) -> None:
    """Print a progress line of the study (a training started or finished) on stderr."""
    err.print(line, markup=False, highlight=False)


def study_value(text: str) -> Any:
    """A ``--set`` value as YAML (so as JSON too): ``3``, ``[w, w, 1]``, ``{kind: openai}``;
    text that is not YAML stays text.

    Example:
        >>> study_value("{kind: openai, model: m}"), study_value("12"), study_value("a: b: c")
        ({'kind': 'openai', 'model': 'm'}, 12, 'a: b: c')
    """
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def study(
    study_file: Annotated[Path, typer.Argument(help="the study YAML", metavar="STUDY.yaml")],
    out_dir: Annotated[Path, typer.Option("--out", help="the study's folder (resumable)")],
    plan: Annotated[
        bool, typer.Option("--plan", help="run the pilot only; print cost and expected intervals")
    ] = False,
    toy: Annotated[bool, typer.Option("--toy", help="apply the file's toy: overrides")] = False,
    set_values: Annotated[
        list[str] | None,
        typer.Option("--set", help="KEY=VALUE for a study field, dotted (problems.limit=20)"),
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="run these conditions only (NAME,NAME; the reference too)"),
    ] = None,
    quiet: Annotated[bool, typer.Option(help="no per-problem lines")] = False,
) -> None:
    """Run a study: conditions interleaved on one engine, a self-consistency control at equal
    tokens, paired 95% intervals, a Pareto plot; rerun the same command to finish it."""
    from tmas.eval.study import Study
    from tmas.eval.study_loading import load_study
    from tmas.eval.study_plan import plan_lines, plan_study
    from tmas.eval.study_report import report_study

    try:
        overrides = {key: study_value(value) for key, value in parse_pairs(set_values or [])}
        chosen = [name for item in only for name in item.split(",") if name] if only else None
        spec = load_study(study_file, overrides, toy=toy, only=chosen)
        command = [
            "tmas",
            "study",
            str(study_file),
            "--out",
            str(out_dir),
            *(["--toy"] if toy else []),
            *(f"--set={item}" for item in set_values or []),
            *(f"--only={item}" for item in only or []),
        ]
        runner_class: type[Study] = Study
        if any(c.train is not None for c in spec.conditions.values()):
            from tmas.training.study_training import TrainingStudy

            runner_class = partial(TrainingStudy, log=None if quiet else progress_line)  # type: ignore[assignment]
        runner = runner_class(
            spec, out_dir, command=shlex.join(command), on_row=StudyProgress(quiet)
        )
        runner.require_models()
        if plan:
            for line in plan_lines(plan_study(runner)):
                out.print(line, markup=False, highlight=False, soft_wrap=True)
            return
        report = report_study(runner)
    except EvaluationStopped as exc:
        fail(str(exc), 1)
        return
    except (ValueError, ModelFileError, StorageError) as exc:
        fail(error_line(exc))
        return
    out.print(
        (out_dir / "report.md").read_text(encoding="utf-8"),
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    for path in report["plots"]:
        out.print(f"plot: {path}", markup=False)
