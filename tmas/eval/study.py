"""Running a study: every condition (and the self-consistency control) at every seed is an
evaluation folder under ``OUT/conditions/NAME/seed-S``, all on one engine and one run database,
with problems interleaved across conditions (the order of conditions turns with each problem)
so a slow spell of a shared machine hits all alike. A pilot on the first problems sizes the
matched conditions; its runs of unmatched conditions are the study's own. Run again, a study
finishes what is missing; a changed condition is refused by its folder's identity.

Example (Python; ``tmas study STUDY.yaml --out DIR`` does the same)::

    from tmas.eval.study import Study
    from tmas.eval.study_loading import load_study
    from tmas.eval.study_report import report_study
    study = Study(load_study(Path("benchmarks/studies/cpu_gsm8k.yaml")), Path("out"))
    report = report_study(study)  # report.md, report.json, pareto.png, iterations.png
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from tmas.api import load_topology
from tmas.eval.compute_match import WidthChoice, fit_tokens, matching_width
from tmas.eval.data import Problem, load_problems
from tmas.eval.dedupe import Overlap, deduplicated
from tmas.eval.evaluation import Evaluation, EvaluationStopped
from tmas.eval.job import ProblemJob, solve_concurrently
from tmas.eval.results import ANSWERED
from tmas.eval.study_arms import Arm, arm_label, interleaved, tokens_of
from tmas.eval.study_file import Condition, StudyError, StudyFile
from tmas.eval.study_memory import arm_namespace, read_items, seed_memory
from tmas.graphs.run_plan import RunPlan, plan_run, revised_backend
from tmas.graphs.spec import GraphSpec
from tmas.llm.backend import LOCAL_KINDS, BackendSpec
from tmas.llm.model_files import require_bundled

DESIGN = "design.json"
RowCallback = Callable[[str, dict[str, Any]], None]


@dataclass
class PilotResult:
    """The pilot's rows per condition (unmatched) or per condition and width (matched), and
    the width each matched condition was given."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    width_rows: dict[str, dict[int, list[dict[str, Any]]]] = field(default_factory=dict)
    widths: dict[str, WidthChoice] = field(default_factory=dict)


class Study:
    """A study file run into ``out_dir``: problems, pilot, matched widths, the interleaved
    evaluations and (:mod:`tmas.eval.study_report`) the report. Conditions that train first
    need :class:`tmas.training.study_training.TrainingStudy` (what ``tmas study`` runs)."""

    trains = False

    def __init__(
        self,
        study: StudyFile,
        out_dir: Path,
        *,
        command: str = "",
        on_row: RowCallback | None = None,
    ) -> None:
        self.file, self.out_dir = study, Path(out_dir)
        self.command = command or f"tmas study STUDY.yaml --out {out_dir}"
        self.on_row = on_row
        self.db = self.out_dir / "runs.sqlite"
        try:
            self.backend: BackendSpec = revised_backend(BackendSpec(), study.backend)
        except ValueError as exc:
            raise StudyError(f"backend: {exc}") from None
        self.conditions: dict[str, Condition] = study.all_conditions()
        training = [name for name, c in self.conditions.items() if c.train is not None]
        if training and not self.trains:
            raise StudyError(
                f"condition {training[0]} trains first: run the study with tmas study "
                "(tmas.training.study_training.TrainingStudy from Python)"
            )
        self._topologies: dict[str, GraphSpec] = {}
        self._problems: tuple[list[Problem], Overlap] | None = None

    # problems ------------------------------------------------------------------------
    def problems(self) -> tuple[list[Problem], Overlap]:
        """The study's problems (shuffled, deduplicated, limited) and what deduplication left
        out."""
        if self._problems is None:
            spec = self.file.problems
            problems = load_problems(self.file.path(spec.data), proof=spec.proof)
            training = [
                *(p for f in spec.dedupe_against for p in load_problems(self.file.path(f))),
                *self.training_problems(),
            ]
            problems, overlap = deduplicated(problems, training, spec.near_overlap)
            if spec.shuffle_seed is not None:
                random.Random(spec.shuffle_seed).shuffle(problems)
            self._problems = (problems[: spec.limit] if spec.limit else problems, overlap)
        return self._problems

    def dedupe_sources(self) -> list[str]:
        """What the study's problems are deduplicated against, as the file names them: its
        ``dedupe_against`` files and its training conditions' data.

        Example:
            >>> from tmas.eval.study_loading import parse_study
            >>> Study(parse_study({"name": "s", "reference": "a", "conditions": {"a": {}},
            ...     "problems": {"dedupe_against": ["gsm8k"]}}), Path("o")).dedupe_sources()
            ['gsm8k']
        """
        trained = [str(c.train.settings["data"]) for c in self.conditions.values() if c.train]
        return list(dict.fromkeys([*self.file.problems.dedupe_against, *trained]))

    def training_problems(self) -> list[Problem]:
        """The problems the training conditions learn from (none here; a training study's)."""
        return []

    def required_models(self) -> dict[str, list[str | None]]:
        """The models the study needs, by what needs them: its engine's when local (a training
        study adds its trainings')."""
        local = self.backend.kind in LOCAL_KINDS
        return {"the study's backend": [self.backend.model if local else None]}

    def require_models(self) -> None:
        """ModelFileError, before anything runs, naming what to install when a bundled model
        the study needs (:meth:`required_models`) is not installed."""
        for user, models in self.required_models().items():
            require_bundled(*models, user=user)

    def trained_adapter(self, name: str, seed: int) -> str:
        """The adapter condition ``name`` trained at ``seed`` (a training study trains it)."""
        raise StudyError(f"condition {name} trains first: run it with tmas study")

    def design_extras(self) -> dict[str, Any]:
        """What a kind of study adds to ``design.json`` (a training study: its trainings)."""
        return {}

    # plans ---------------------------------------------------------------------------
    def topology(self, name: str) -> GraphSpec:
        """The condition's topology with its plugins and prompts (loaded once)."""
        if name not in self._topologies:
            condition = self.conditions[name]
            prompts = (
                condition.prompts
                if isinstance(condition.prompts, dict)
                else [self.file.path(p) for p in condition.prompts]
            )
            plugins = [self._plugin(p) for p in condition.plugins]
            self._topologies[name] = load_topology(
                self.file.path(condition.graph)
                if condition.graph.endswith((".yaml", ".yml", ".json"))
                else condition.graph,
                plugins=plugins,
                prompts=prompts,
            )
        return self._topologies[name]

    def _plugin(self, plugin: str) -> str:
        return self.file.path(plugin) if plugin.endswith(".py") else plugin

    def plan(self, name: str, seed: int, width: int | None = None) -> RunPlan:
        """The run plan of condition ``name`` at ``seed`` (and a matched ``width``)."""
        condition = self.conditions[name]
        if "seed" in condition.settings:
            raise StudyError(
                f"condition {name}: seeds are the study's (seeds: [...]), not a condition's setting"
            )
        layers: list[dict[str, Any]] = [condition.settings]
        if self.file.problems.proof:  # graded against reference proofs, as tmas eval --proof
            layers.insert(0, {"proof": True})
        if condition.roles:
            layers.insert(0, {"roles": condition.roles})
        if width is not None and condition.match_tokens is not None:
            layers.append(condition.match_tokens.settings(width))
        if condition.settings.get("memory"):  # the arm's own memory
            layers.append({"memory": arm_namespace(condition.settings["memory"], name, seed)})
        layers.append({"seed": seed})
        plugins = [self._plugin(p) for p in condition.plugins]
        try:
            backend = self.backend
            if condition.train is not None:
                adapter = self.trained_adapter(name, seed)
                if condition.train.roles:
                    roles = {r: {"adapter": adapter} for r in condition.train.roles}
                    layers.insert(1 if condition.roles else 0, {"roles": roles})
                else:
                    backend = revised_backend(backend, {"adapter": adapter})
            return plan_run(self.topology(name), layers, backend, plugins)
        except ValueError as exc:
            raise StudyError(f"condition {name}: {exc}") from None

    def _arm(
        self,
        label: str,
        name: str,
        seed: int,
        folder: Path,
        problems: list[Problem],
        width: int | None = None,
    ) -> Arm:
        evaluation = Evaluation(
            problems=problems,
            plan=self.plan(name, seed, width),
            db=self.db,
            out_dir=folder,
            max_concurrency=self.file.max_concurrency,
        )
        return Arm(label, name, seed, evaluation, width)

    def folder(self, name: str, seed: int) -> Path:
        """The evaluation folder of a condition at a seed.

        Example:
            >>> from tmas.eval.study_loading import parse_study
            >>> study = Study(parse_study({"name": "s", "reference": "a",
            ...     "conditions": {"a": {}}}), Path("out"))
            >>> study.folder("a", 3).as_posix()
            'out/conditions/a/seed-3'
        """
        return self.out_dir / "conditions" / name / f"seed-{seed}"

    # running -------------------------------------------------------------------------
    def prepare(self, arms: list[Arm]) -> dict[str, list[ProblemJob]]:
        """Every arm's jobs, by label; refuses (``EvaluationMismatch``) a folder whose saved
        results were made with other settings, before anything runs."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        jobs = {arm.label: arm.evaluation.prepare() for arm in arms}
        for arm in arms:
            items = self.conditions[arm.condition].memory_import
            if items is not None:
                namespace = arm.evaluation.plan.config.memory
                assert namespace is not None  # the file's validation says so
                seed_memory(self.db, namespace, read_items(Path(self.file.path(items))))
        return jobs

    def solve_arms(
        self, arms: list[Arm], jobs: dict[str, list[ProblemJob]], *, finish: bool = True
    ) -> dict[str, dict[str, dict[str, Any]]]:
        """Solve the arms' problems interleaved, ``concurrency`` at once, and (``finish``)
        write each arm's results and summary; the rows per arm label, by problem id. Stops
        starting problems after one failed for a reason no retry fixes: every arm's folder
        then records the stop, so a rerun may correct the model settings
        (``EvaluationStopped``). Interrupted, it starts no further problem."""
        rows: dict[str, dict[str, dict[str, Any]]] = {arm.label: {} for arm in arms}
        order = interleaved(arms, jobs)
        tasks = [partial(arm.evaluation.solve, job) for arm, job in order]
        for index, row in solve_concurrently(tasks, self.file.concurrency, threading.Event()):
            arm = order[index][0]
            rows[arm.label][row["id"]] = row
            if self.on_row is not None:
                self.on_row(arm.label, row)
        fatal = [r for arm_rows in rows.values() for r in arm_rows.values() if r.get("fatal")]
        if fatal:
            for arm in arms:
                arm.evaluation.mark_stopped(fatal[0]["error"])
            raise EvaluationStopped(
                f"study stopped: {fatal[0]['error']}; fix the cause and rerun the same command "
                "(a corrected backend or role model is accepted while no problem has finished; "
                "every saved run resumes)"
            )
        for arm in arms if finish else ():
            arm.evaluation.finish(rows[arm.label])
        return rows

    def pilot(self) -> PilotResult:
        """Run the pilot: the first ``pilot.problems`` problems, every unmatched condition
        at its first seed in its own folder, every matched one at its pilot widths (under
        ``OUT/pilot``); then choose each matched width against the reference's tokens on the
        same problems."""
        problems = self.problems()[0][: self.file.pilot.problems]
        if not problems:
            raise StudyError("the study has no problems (after deduplication and the limit)")
        seed = self.file.seeds[0]
        arms: list[Arm] = []
        for name, condition in self.conditions.items():
            if condition.match_tokens is None:  # at its own first seed: the study's own runs
                own = self.file.seeds_of(name)[0]
                arms.append(self._arm(name, name, own, self.folder(name, own), problems))
                continue
            for width in condition.match_tokens.pilot_widths:
                folder = self.out_dir / "pilot" / f"{name}-w{width}"
                arms.append(self._arm(f"{name}@{width}", name, seed, folder, problems, width))
        rows = self.solve_arms(arms, self.prepare(arms), finish=False)
        result = PilotResult()
        for arm in arms:
            ordered = [rows[arm.label][p.id] for p in problems]
            if arm.width is None:
                result.rows[arm.condition] = ordered
            else:
                result.width_rows.setdefault(arm.condition, {})[arm.width] = ordered
        target = self._mean_tokens(result.rows[self.file.reference], self.file.reference)
        for name, by_width in result.width_rows.items():
            match = self.conditions[name].match_tokens
            assert match is not None
            model = fit_tokens([(w, self._mean_tokens(r, name)) for w, r in by_width.items()])
            result.widths[name] = matching_width(model, target, match.max_width)
        return result

    @staticmethod
    def _mean_tokens(rows: list[dict[str, Any]], name: str) -> float:
        if not any(r["status"] in ANSWERED for r in rows):
            errors = "; ".join(sorted({str(r.get("error")) for r in rows}))[:300]
            raise StudyError(
                f"the pilot of {name} answered no problem ({errors}); fix the cause and rerun"
            )
        return sum(tokens_of(r) for r in rows) / len(rows)  # spent, as the report counts

    def arms(self, widths: dict[str, WidthChoice]) -> list[Arm]:
        """Every condition at every seed over all the study's problems, matched ones at their
        chosen width."""
        problems = self.problems()[0]
        return [
            self._arm(
                arm_label(name, seed),
                name,
                seed,
                self.folder(name, seed),
                problems,
                widths[name].width if name in widths else None,
            )
            for seed in self.file.seeds
            for name in self.conditions
            if seed in self.file.seeds_of(name)
        ]

    def saved_widths(self) -> dict[str, WidthChoice] | None:
        """The matched widths of the design this folder recorded for the same study file (a
        rerun keeps them, whatever a resumed pilot run would now say), else None."""
        path = self.out_dir / DESIGN
        try:
            design = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        if design.get("study") != self._document():
            return None
        return {
            name: WidthChoice(m["width"], m["modelled_tokens"], m["target_tokens"])
            for name, m in design.get("widths", {}).items()
        }

    def _document(self) -> dict[str, Any]:
        return self.file.model_dump(mode="json", exclude={"toy"})

    def write_design(self, widths: dict[str, WidthChoice], arms: list[Arm]) -> dict[str, Any]:
        """Record what the study resolved (``design.json``): problems, deduplication, the
        plans of the arms (each condition's first seed), matched widths, engine and
        concurrency."""
        problems, overlap = self.problems()
        design = {
            "study": self._document(),
            "command": self.command,
            "problem_ids": [p.id for p in problems],
            "deduplication": overlap.record(),
            "engine": self.backend.describe(),
            "backend": self.backend.model_dump(mode="json"),
            "concurrency": self.file.concurrency,
            "max_concurrency": self.file.max_concurrency,
            "widths": {name: choice.record() for name, choice in widths.items()},
            "plans": {
                arm.condition: arm.evaluation.plan.record()
                for arm in arms
                if arm.seed == self.file.seeds_of(arm.condition)[0]
            },
            **self.design_extras(),
        }
        self.out_dir.mkdir(parents=True, exist_ok=True)
        (self.out_dir / DESIGN).write_text(json.dumps(design, indent=2), encoding="utf-8")
        return design

    def run(self) -> tuple[dict[str, Any], dict[str, dict[str, dict[str, Any]]]]:
        """The pilot (unless this folder's design already fixed the matched widths), then
        every arm: the design (``design.json``, written once every folder accepted its
        condition) and the rows per arm label, by problem id
        (:func:`tmas.eval.study_report.report_study` writes the report)."""
        widths = self.saved_widths()
        if widths is None:
            widths = self.pilot().widths
        arms = self.arms(widths)
        jobs = self.prepare(arms)
        design = self.write_design(widths, arms)
        return design, self.solve_arms(arms, jobs)
