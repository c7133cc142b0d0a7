"""GRPO on real SmolLM2 (its GGUF turned into a plain checkpoint): rows exported from a real
saved TMAS run, a few steps killed and resumed (the step count continues, nothing counted
twice), metrics per reward component and per ``_source``, the adapter loaded back by the hf
backend; and bad training input refused in one line."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tmas
from tmas.cli import app
from tmas.llm.backend import BackendSpec, make_chat_model
from tmas.training.data_files import read_rows, write_rows

pytestmark = pytest.mark.slow

PROBLEM = "Tom has 3 apples and buys 4 more. How many apples does he have now?"
RUN_CONFIG = {
    "n_candidates": 2,
    "n_verifications": 1,
    "max_iterations": 2,
    "epsilon": 0.5,
    "seed": 0,  # iteration 2: one exploit, one explore candidate
    "solver_max_tokens": 48,
    "verifier_max_tokens": 24,
    "summary_max_tokens": 24,
    "experience_max_tokens": 48,
    "guideline_max_tokens": 24,
    "max_retries": 0,
}
STEPS = 3


@pytest.fixture(scope="module")
def training_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rows exported from a real TMAS run on the embedded SmolLM2, one of each kind (three steps
    of one prompt each see every kind once)."""
    folder = tmp_path_factory.mktemp("grpo")
    db = folder / "runs.sqlite"
    backend = {"kind": "llamacpp", "model": "smollm2", "n_ctx": 2048}
    tmas.solve(PROBLEM, backend=backend, config=RUN_CONFIG, gold="7", db=db, run_id="real")
    exported = folder / "rollouts.parquet"
    result = CliRunner().invoke(
        app, ["export", "rollouts", "real", "--db", str(db), "--out", str(exported)]
    )
    assert result.exit_code == 0, result.output
    rows = read_rows(exported)
    by_source = {source: [r for r in rows if r["_source"] == source] for source in SOURCES}
    assert all(by_source.values()), {s: len(r) for s, r in by_source.items()}
    data = folder / "data.jsonl"
    shortest = [
        min(picked, key=lambda r: len(r["prompt"][1]["content"])) for picked in by_source.values()
    ]
    for row in shortest:  # novelty is judged only against a bank: give the row one if empty
        if row["_source"] == "guideline" and not row["extra_info"]["guidelines"]:
            row["extra_info"]["guidelines"] = ["Add the two amounts directly"]
    write_rows(shortest, data)
    return data


SOURCES = ("normal", "experience", "guideline")


def _train(data: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "tmas.cli", "train", "grpo", str(data), "--out", str(out),
        "--steps", str(STEPS), "--generations", "2", "--prompts-per-step", "1",
        "--max-completion-length", "16", "--learning-rate", "1e-4",
        "--judge-backend", "llamacpp", "--judge-model", "smollm2", "--quiet",
    ]  # fmt: skip


def test_grpo_smoke_killed_and_resumed_then_adapter_loads(training_data: Path, tmp_path) -> None:
    out = tmp_path / "train"
    first = subprocess.Popen(
        _train(training_data, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 600
    complete = out / "checkpoints" / "checkpoint-1" / "trainer_state.json"  # written last
    while not complete.is_file() and first.poll() is None:
        assert time.monotonic() < deadline, "no checkpoint within 10 minutes"
        time.sleep(0.5)
    assert first.poll() is None, first.stderr.read().decode()[-2000:]
    first.send_signal(signal.SIGKILL)
    first.wait()
    first.stderr.close()
    record = json.loads((out / "training.json").read_text())
    assert record["status"] == "running" and not (out / "adapter").exists()

    second = subprocess.run(_train(training_data, out), capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stderr[-3000:]
    record = json.loads((out / "training.json").read_text())
    assert record["status"] == "finished" and record["steps"] == STEPS
    assert record["resumed_from"].rsplit("-", 1)[1] in {"1", "2"}
    trainer = record["trainer"]  # read back from TRL's own config
    assert (trainer["scale_rewards"], trainer["mask_truncated_completions"]) == ("group", True)
    assert trainer["loss_type"] == "dapo" and trainer["max_completion_length"] == 16
    assert record["rows"] == {"used": 3, "prompt_too_long": 0}

    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [line["step"] for line in lines if "loss" in line]
    assert steps == list(range(1, STEPS + 1))
    # The counters of training.json count this process's steps (those after the checkpoint it
    # resumed from), one batch of one prompt's two completions a step: exactly the groups
    # without spread and the completions left out that those steps logged.
    resumed = int(record["resumed_from"].rsplit("-", 1)[1])
    rerun = [line for line in lines if "loss" in line and line["step"] > resumed]
    assert len(rerun) == STEPS - resumed
    assert all(line["spread/zero_spread_groups"] in (0.0, 1.0) for line in rerun)
    dropped = sum(line["spread/zero_spread_groups"] for line in rerun)
    assert record["dropped_zero_spread_groups"] == dropped
    assert record["excluded_completions"] == sum(line["judge_failures"] for line in rerun)
    assert record["judge_failures"] == record["excluded_completions"]
    # spread covers every step, those before the resume too
    spread = record["spread"]
    assert spread["steps"] == STEPS
    with_spread = sum(line["frac_reward_zero_std"] < 1 for line in lines if "loss" in line)
    assert spread["steps_with_spread"] == with_spread
    cut = [line["completions/clipped_ratio"] for line in lines if "loss" in line]
    assert spread["completions_cut"] == round(sum(cut) / len(cut), 4)
    for line in (line for line in lines if "loss" in line):
        assert math.isfinite(line["loss"]) and math.isfinite(line["kl"])
        assert "rewards/correctness/mean" in line and "completions/mean_length" in line
    seen = {key.split("/")[1] for line in lines for key in line if key.startswith("reward/")}
    assert seen == set(SOURCES)
    assert any("reward/guideline/novelty" in line for line in lines)
    assert any("reward/experience/experience" in line for line in lines)
    assert (out / "rewards.png").stat().st_size > 1000

    # The adapter serves every role of a TMAS run through the hf backend; the training folder
    # names it as well as its adapter/ subfolder.
    backend = {"kind": "hf", "model": "smollm2", "adapter": str(out)}
    chat = make_chat_model(BackendSpec(**backend), max_tokens=16)
    assert type(chat.loaded.model).__name__.startswith("Peft")
    config = {**RUN_CONFIG, "n_candidates": 1, "max_iterations": 1, "solver_max_tokens": 16}
    outcome = tmas.solve(PROBLEM, backend=backend, config=config, db=tmp_path / "hf.sqlite")
    usage = outcome.state["usage"]
    assert usage["solver"]["calls"] == 1 and usage["verifier"]["calls"] == 1
    assert all(role["output_tokens"] > 0 for role in usage.values())


def test_bad_training_input_fails_in_one_line(tmp_path: Path, training_data: Path) -> None:
    runner = CliRunner()
    no_columns = tmp_path / "bad.jsonl"
    no_columns.write_text(json.dumps({"prompt": [{"role": "user", "content": "1+1?"}]}) + "\n")

    def train(*args: str):
        return runner.invoke(app, ["train", "grpo", *args, "--quiet", "--no-judge"])

    cases = [
        (train(str(no_columns), "--out", str(tmp_path / "o1")), "missing _source"),
        (train(str(training_data), "--out", "/proc/no-such/out"), "cannot write to"),
        (
            train(str(training_data), "--out", str(tmp_path / "o2"), "--model", "/no/model"),
            "no model at /no/model",
        ),
    ]
    for result, message in cases:
        assert result.exit_code == 2, result.output
        assert message in result.output
        assert len([line for line in result.output.splitlines() if line.strip()]) == 1
    assert not (tmp_path / "o1" / "adapter").exists()
    banked = tmp_path / "banked.jsonl"
    write_rows([row for row in read_rows(training_data) if row["_source"] == "guideline"], banked)
    unjudged = runner.invoke(
        app, ["train", "grpo", str(banked), "--out", str(tmp_path / "o4"), "--quiet"]
    )
    assert unjudged.exit_code == 2 and "need a novelty judge" in unjudged.output
    assert "--judge-self" in unjudged.output
    too_long = train(str(training_data), "--out", str(tmp_path / "o5"), "--max-prompt-length", "8")
    assert too_long.exit_code == 2 and "every prompt is longer than 8 tokens" in too_long.output
    taken = tmp_path / "o3"
    taken.mkdir()
    (taken / "training.json").write_text(json.dumps({"settings": {"model": "qwen"}}))
    other = train(str(training_data), "--out", str(taken))
    assert other.exit_code == 2 and "holds a training with other settings (model)" in other.output
