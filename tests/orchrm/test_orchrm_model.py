"""The plan reward model for real (SmolLM2, LoRA, TRL's RewardTrainer): trained on pairs built
from synthetic evaluation artifacts with a known rule, it ranks held-out pairs; ``--graph auto``
then runs only the chosen plan (calls counted on the scripted server) and records every score.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trl  # noqa: F401 - the train extra, which the test command installs
from typer.testing import CliRunner

from tmas.cli.app import app
from tmas.eval.identity import evaluation_identity
from tmas.graphs.run_plan import plan_run
from tmas.llm.backend import BackendSpec
from tmas.orchrm.plan_space import load_plan_space
from tmas.orchrm.reward_model import RM_RECORD
from tmas.testing.fake_openai_server import FakeOpenAIServer

pytestmark = pytest.mark.slow

SPACE = """name: rule
plans:
  - {name: cot, graph: majority_vote, settings: {n_candidates: 1}}
  - {name: refine, graph: self_refine, settings: {n_candidates: 1, max_iterations: 2}}
"""
CALLS = {"cot": 1, "refine": 4}  # one sample; two rounds of a rewrite and its critique
CIRCLE = "A circle has radius {a} cm. What is its area in square centimetres?"
APPLES = "Tom has {a} apples and buys {b} more. How many apples does he have?"


def problem(index: int, rng: random.Random) -> dict[str, str]:
    """Odd problems are circle areas (solved only by ``refine``), even ones sums (only ``cot``)."""
    a, b = rng.randint(2, 90), rng.randint(2, 90)
    text = (CIRCLE if index % 2 else APPLES).format(a=a, b=b)
    return {"id": f"q{index}", "problem": text, "answer": str(a + b)}


def synthetic_artifacts(root: Path, count: int) -> list[Path]:
    """One evaluation folder per plan, as ``tmas eval`` writes them, following the rule."""
    space = load_plan_space(root / "plans.yaml")
    rng = random.Random(0)
    problems = [problem(i, rng) for i in range(count)]
    backend = BackendSpec(kind="openai", base_url="http://127.0.0.1:1/v1", model="scripted")
    folders = []
    for plan in space.plans:
        folder = root / f"eval-{plan.name}"
        folder.mkdir()
        identity = evaluation_identity(plan_run(plan.spec, plan.config, backend))
        (folder / "identity.json").write_text(json.dumps(identity))
        rows = []
        for index, item in enumerate(problems):
            solved = (plan.name == "refine") == bool(index % 2)
            usage = {"tokens_in": 100, "tokens_out": 50, "run_id": f"r-{item['id']}"}
            rows.append({**item, "gold": item["answer"], "status": "finished", "correct": solved,
                         **usage})  # fmt: skip
        (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        folders.append(folder)
    return folders


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("orchrm")
    (root / "plans.yaml").write_text(SPACE)
    folders = synthetic_artifacts(root, 32)
    runner = CliRunner()
    made = runner.invoke(app, ["orchrm", "pairs", *map(str, folders), "--out",
                               str(root / "pairs.jsonl"), "--held-out", "0.25"])  # fmt: skip
    assert made.exit_code == 0, made.output
    report = json.loads(made.stdout)
    assert report["pairs"] == {"correct-over-incorrect": 24}
    assert report["held_out_pairs"] == {"correct-over-incorrect": 8}
    result = runner.invoke(app, ["orchrm", "train", str(root / "pairs.jsonl"), "--out",
                                 str(root / "rm"), "--epochs", "1", "--eval-pairs",
                                 str(root / "pairs.held_out.jsonl"), "--quiet"])  # fmt: skip
    assert result.exit_code == 0, result.output
    return root


def test_the_reward_model_ranks_held_out_pairs_by_the_rule(trained: Path) -> None:
    record = json.loads((trained / "rm" / "training.json").read_text())
    assert record["status"] == "finished"
    assert record["pairs"]["held_out"] == 8 and record["pairs"]["train"] == 24
    assert record["pairwise_accuracy"]["held_out"] >= 0.9
    metrics = [
        json.loads(line) for line in (trained / "rm" / "metrics.jsonl").read_text().splitlines()
    ]
    assert any("loss" in line for line in metrics)
    assert metrics[-1]["held_out_pairwise_accuracy"] == record["pairwise_accuracy"]["held_out"]
    rm = trained / "rm" / "adapter"
    assert (rm / "orchrm.json").is_file() and (rm / "adapter_config.json").is_file()


def test_score_ranks_the_plans_of_a_problem(trained: Path) -> None:
    runner = CliRunner()
    ranked = {}
    for kind, text in (("circle", CIRCLE.format(a=7)), ("apples", APPLES.format(a=3, b=4))):
        args = ["orchrm", "score", text, "--reward-model", str(trained / "rm"),
                "--plan-space", str(trained / "plans.yaml"), "--json"]  # fmt: skip
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        ranked[kind] = [row["plan"] for row in json.loads(result.stdout)]
    assert ranked == {"circle": ["refine", "cot"], "apples": ["cot", "refine"]}


def test_solve_auto_runs_only_the_chosen_plan_and_records_every_score(trained: Path) -> None:
    runner, db = CliRunner(), trained / "runs.sqlite"
    auto = ["--graph", "auto", "--plan-space", str(trained / "plans.yaml"), "--reward-model",
            str(trained / "rm"), "--db", str(db), "--quiet"]  # fmt: skip
    for run_id, text, chosen in (("circle", CIRCLE.format(a=5), "refine"),
                                 ("apples", APPLES.format(a=2, b=9), "cot")):  # fmt: skip
        with FakeOpenAIServer() as server:
            result = runner.invoke(app, ["solve", text, *auto, "--base-url", server.base_url,
                                         "--model", "scripted", "--run-id", run_id])  # fmt: skip
            assert result.exit_code == 0, result.output
            assert server.request_count == CALLS[chosen]  # nothing of the other plan ran
        shown = runner.invoke(app, ["show", run_id, "--db", str(db), "--json"])
        choice = json.loads(shown.stdout)["plan_choice"]
        assert choice["chosen"] == chosen
        assert {c["name"] for c in choice["candidates"]} == {"cot", "refine"}
        assert all(isinstance(c["score"], float) for c in choice["candidates"])
    page = trained / "trace.html"
    traced = runner.invoke(app, ["trace", "circle", "--db", str(db), "--html", str(page)])
    assert traced.exit_code == 0, traced.output
    assert "plans scored before the run" in page.read_text()


def test_eval_auto_chooses_per_problem_once(trained: Path) -> None:
    data = trained / "auto.jsonl"
    rng = random.Random(7)
    data.write_text("".join(json.dumps(problem(i, rng)) + "\n" for i in range(4)))
    args = ["eval", "--data", str(data), "--out", str(trained / "eval-auto"), "--graph", "auto",
            "--plan-space", str(trained / "plans.yaml"), "--reward-model", str(trained / "rm"),
            "--db", str(trained / "eval.sqlite"), "--quiet"]  # fmt: skip
    runner = CliRunner()
    with FakeOpenAIServer() as server:
        result = runner.invoke(app, [*args, "--base-url", server.base_url, "--model", "scripted"])
        assert result.exit_code == 0, result.output
        first = server.request_count
        again = runner.invoke(app, [*args, "--base-url", server.base_url, "--model", "scripted"])
        assert again.exit_code == 0, again.output
        assert server.request_count == first  # finished problems are not chosen or run again
    rows = [
        json.loads(line)
        for line in (trained / "eval-auto" / "results.jsonl").read_text().splitlines()
    ]
    assert [row["plan"] for row in rows] == ["cot", "refine", "cot", "refine"]
    assert first == sum(CALLS[row["plan"]] for row in rows)
    assert all(set(row["plan_scores"]) == {"cot", "refine"} for row in rows)
    identity = json.loads((trained / "eval-auto" / "identity.json").read_text())
    assert identity["graph"] == "auto" and identity["auto"]["k"] == 4


def test_training_killed_and_resumed_continues_its_steps(trained: Path, tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join((trained / "pairs.jsonl").read_text().splitlines(True)[:8]))
    out = tmp_path / "rm"
    command = [sys.executable, "-m", "tmas.cli", "orchrm", "train", str(pairs), "--out", str(out),
               "--epochs", "1", "--batch-size", "2", "--save-every", "1", "--eval-fraction", "0",
               "--quiet"]  # fmt: skip
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    complete = out / "checkpoints" / "checkpoint-2" / "trainer_state.json"  # written last
    deadline = time.monotonic() + 600
    while not complete.is_file() and first.poll() is None:
        assert time.monotonic() < deadline, "no second checkpoint within 10 minutes"
        time.sleep(0.2)
    assert first.poll() is None, first.stderr.read().decode()[-2000:]
    first.send_signal(signal.SIGKILL)
    first.wait()
    first.stderr.close()
    assert json.loads((out / "training.json").read_text())["status"] == "running"
    assert not (out / "adapter").exists()  # no reward model until a training finishes

    second = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stderr[-3000:]
    record = json.loads((out / "training.json").read_text())
    assert record["status"] == "finished" and record["steps"] == 4
    assert int(record["resumed_from"].rsplit("-", 1)[1]) >= 2
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines if "loss" in line] == [1, 2, 3, 4]  # none twice
    assert (out / "adapter" / RM_RECORD).is_file()
