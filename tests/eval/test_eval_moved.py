"""An evaluation folder moved or copied with its database keeps its runs: a rerun reports them
instead of solving every problem again; a LoRA adapter counts by its content, so a moved
training arm is the same arm and an adapter retrained in place is not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tmas.config import TMASConfig
from tmas.eval.data import load_problems
from tmas.eval.evaluation import RESULTS, Evaluation
from tmas.eval.identity import (
    EvaluationMismatch,
    check_identity,
    evaluation_identity,
    write_identity,
)
from tmas.eval.job import eval_run_id
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import RunPlan, plan_run
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.testing.fake_chat import ScriptedChatModel

CONFIG = TMASConfig(n_candidates=2, n_verifications=1, max_iterations=1, max_retries=0)
BACKEND = BackendSpec(kind="openai", base_url="http://unused/v1", model="scripted")


def evaluation(folder: Path, model: ScriptedChatModel) -> Evaluation:
    """Two sample problems evaluated into ``folder/out`` with the database in ``folder``."""
    return Evaluation(
        problems=load_problems("gsm8k", limit=2),
        plan=plan_run(load_bundled("majority_vote"), CONFIG, BACKEND),
        router=ModelRouter(model),
        db=folder / "runs.sqlite",
        out_dir=folder / "out",
    )


def rows(folder: Path) -> list[dict]:
    lines = (folder / "out" / RESULTS).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("carry", [shutil.move, shutil.copytree])
def test_a_moved_or_copied_folder_reports_its_runs_without_a_model_call(
    tmp_path: Path, carry: object
) -> None:
    first = ScriptedChatModel()
    evaluation(tmp_path / "a", first).run()
    assert sum(first.calls.values()) > 0
    before = rows(tmp_path / "a")
    carry(tmp_path / "a", tmp_path / "b")  # type: ignore[operator]

    again = ScriptedChatModel()
    summary = evaluation(tmp_path / "b", again).run()

    assert sum(again.calls.values()) == 0
    after = rows(tmp_path / "b")
    assert [r["run_id"] for r in after] == [r["run_id"] for r in before]
    assert [r["selected_answer"] for r in after] == [r["selected_answer"] for r in before]
    assert summary["finished"] == 2


def test_a_moved_folder_solves_only_the_problems_it_had_not_run(tmp_path: Path) -> None:
    evaluation(tmp_path / "a", ScriptedChatModel()).run()
    kept = rows(tmp_path / "a")[0]
    (tmp_path / "a" / "out" / RESULTS).write_text(json.dumps(kept) + "\n", encoding="utf-8")
    shutil.move(tmp_path / "a", tmp_path / "b")
    # the second problem's run is still in the database, under the folder's old id: its row
    # is gone, so nothing names it and it runs again under the new folder's id
    again = ScriptedChatModel()
    evaluation(tmp_path / "b", again).run()
    after = rows(tmp_path / "b")
    assert after[0]["run_id"] == kept["run_id"]
    assert after[1]["run_id"] == eval_run_id(tmp_path / "b" / "out", after[1]["id"])
    assert sum(again.calls.values()) > 0


def adapter(folder: Path, weights: bytes) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text('{"r": 8}', encoding="utf-8")
    (folder / "adapter_model.safetensors").write_bytes(weights)
    return folder


def plan_with(path: Path, *, role: bool = False) -> RunPlan:
    """A plan whose model carries the adapter at ``path`` (the verifier's only, with ``role``)."""
    if role:
        config = CONFIG.model_copy(update={"roles": {"verifier": {"adapter": str(path)}}})
        return plan_run(load_bundled("majority_vote"), config, BackendSpec(kind="hf"))
    return plan_run(
        load_bundled("majority_vote"), CONFIG, BackendSpec(kind="hf", adapter=str(path))
    )


@pytest.mark.parametrize("role", [False, True], ids=["backend adapter", "role adapter"])
def test_an_adapter_counts_by_its_content_not_its_path(tmp_path: Path, role: bool) -> None:
    old = adapter(tmp_path / "study" / "training" / "adapter", b"trained")
    write_identity(tmp_path, evaluation_identity(plan_with(old, role=role)))
    saved = json.loads((tmp_path / "identity.json").read_text(encoding="utf-8"))
    assert str(old) not in json.dumps(saved)  # the path is not what identifies it

    shutil.move(tmp_path / "study", tmp_path / "moved")  # the study folder, adapter and all
    moved = tmp_path / "moved" / "training" / "adapter"
    assert check_identity(tmp_path, evaluation_identity(plan_with(moved, role=role))) is False

    (moved / "adapter_model.safetensors").write_bytes(b"retrained")
    with pytest.raises(EvaluationMismatch) as refused:
        check_identity(tmp_path, evaluation_identity(plan_with(moved, role=role)))
    named = "config.roles.verifier.adapter" if role else "backend.adapter"
    assert named in str(refused.value) and "models.verifier" in str(refused.value)


def test_an_identity_saved_with_an_adapter_path_still_matches_while_the_path_holds_it(
    tmp_path: Path,
) -> None:
    path = adapter(tmp_path / "adapter", b"trained")
    identity = evaluation_identity(plan_with(path))
    key = identity["backend"]["adapter"]
    legacy = json.loads(json.dumps(identity).replace(key, str(path)))  # as saved before keys
    assert legacy != identity and str(path) in legacy["models"]["solver"]
    write_identity(tmp_path, legacy)
    assert check_identity(tmp_path, identity) is False
