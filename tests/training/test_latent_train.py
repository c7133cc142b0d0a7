"""DiffMAS training of latent_mas's final agent on SmolLM2: two steps lower the loss over the
latent traces, a rerun with more steps resumes, the adapter serves latent_mas and changes its
answer; a topology without a latent final agent is refused before any model loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tmas.cli import app

PROBLEM = "Tom has 3 apples and buys 4 more. How many apples does he have?"


def train(out: Path, steps: int, *extra: str) -> dict:
    result = CliRunner().invoke(app, ["train", "latent", "gsm8k", "--limit", "4", "--out",
                                      str(out), "--steps", str(steps), "--batch-size", "2",
                                      "--learning-rate", "1e-3", "--save-every", "1",
                                      "--quiet", *extra])  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads((out / "training.json").read_text())


@pytest.mark.slow
def test_two_steps_lower_the_loss_and_the_adapter_changes_latent_mas(tmp_path: Path) -> None:
    import peft  # noqa: F401 - the train extra, which the test command installs
    out = tmp_path / "diffmas"
    record = train(out, 2)
    assert record["status"] == "finished" and record["steps"] == 2
    assert record["loss_after"] < record["loss_before"]
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines if "loss" in line] == [1, 2]
    latent = json.loads((out / "adapter" / "latent.json").read_text())
    assert latent["chain"]["final"] == "judger" and len(latent["chain"]["upstream"]) == 3

    more = train(out, 3)  # more steps continue the same training
    assert more["steps"] == 3 and more["resumed_from"].endswith("checkpoint-2")
    assert more["loss_before"] == record["loss_before"]

    from tmas.lifecycle.history import saved_state
    from tmas.storage.sqlite import connect

    answers, db = {}, tmp_path / "runs.sqlite"
    for name, extra in (("base", []), ("trained", ["--adapter", str(out / "adapter")])):
        result = CliRunner().invoke(app, ["solve", PROBLEM, "--graph", "latent_mas", "--backend",
                                          "hf", "--model", "smollm2", "--set", "temperature=0",
                                          "-n", "1", "--db", str(db), "--run-id", name,
                                          "--quiet", *extra])  # fmt: skip
        assert result.exit_code == 0, result.output
        answers[name] = saved_state(connect(db), name)["candidates"][0]["text"]
    assert answers["trained"] != answers["base"]


def test_a_topology_without_a_latent_final_agent_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["train", "latent", "gsm8k", "--graph", "text_mas",
                                      "--out", str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code != 0
    assert "has 0 latent_answer nodes" in result.output and "Traceback" not in result.output
