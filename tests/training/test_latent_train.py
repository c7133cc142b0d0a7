"""DiffMAS training of latent_mas's final agent on SmolLM2: at every training step the final
agent reads the trace of the three upstream agents, two steps lower the loss over the latent
traces, a rerun with more steps resumes, the adapter serves latent_mas and changes its answer;
the same training on text_mas's final agent, which reads the notes its agents wrote at every
step, and whose adapter serves the final agent alone; a topology without a final chain agent is
refused before any model loads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tmas.cli import app
from tmas.llm.hf.latent_trace import LatentTrace

PROBLEM = "Tom has 3 apples and buys 4 more. How many apples does he have?"
UPSTREAM = ["planner", "critic", "refiner"]


@pytest.fixture
def final_reads(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What the final agent reads at each training step: the ids of its turn and target, and
    the trace under them (its segments' agents, the cache's length). Only a training step runs
    the model with gradients: stage I, the loss before and after, and decoding run without."""
    import torch

    reads: list[dict[str, Any]] = []
    forward = LatentTrace.forward

    def recording(self: LatentTrace, **inputs: Any) -> Any:
        if torch.is_grad_enabled():
            reads.append({"ids": inputs["input_ids"][0].tolist(), "cache": self.length(),
                          "agents": [s.agent for s in self.segments],
                          "segments": sum(s.length for s in self.segments)})  # fmt: skip
        return forward(self, **inputs)

    monkeypatch.setattr(LatentTrace, "forward", recording)
    return reads


def train(out: Path, steps: int, *extra: str) -> dict:
    result = CliRunner().invoke(app, ["train", "latent", "gsm8k", "--limit", "4", "--out",
                                      str(out), "--steps", str(steps), "--batch-size", "2",
                                      "--learning-rate", "1e-3", "--save-every", "1",
                                      "--quiet", *extra])  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads((out / "training.json").read_text())


@pytest.mark.slow
def test_two_steps_lower_the_loss_and_the_adapter_changes_latent_mas(
    tmp_path: Path, final_reads: list[dict[str, Any]]
) -> None:
    import peft  # noqa: F401 - the train extra, which the test command installs

    out = tmp_path / "diffmas"
    record = train(out, 2)
    assert record["status"] == "finished" and record["steps"] == 2
    assert len(final_reads) == 2 * 2  # two steps of two problems
    for read in final_reads:  # the latents of the three upstream agents reach the final agent
        assert read["agents"] == UPSTREAM and read["cache"] == read["segments"] > 0
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


@pytest.mark.slow
def test_text_mas_trains_its_final_agent_on_the_notes_and_serves_it_alone(
    tmp_path: Path, final_reads: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    import peft  # noqa: F401 - the train extra, which the test command installs
    from transformers import AutoTokenizer

    import tmas.training.text_notes as text_notes
    from tmas.graphs.bundled import load_bundled
    from tmas.graphs.run_plan import plan_router, plan_run
    from tmas.llm.backend import BackendSpec
    from tmas.llm.checkpoints import checkpoint_for

    written: list[str] = []
    write = text_notes.written_notes

    def writing(*args: Any, **kwargs: Any) -> str:
        written.append(write(*args, **kwargs))
        return written[-1]

    monkeypatch.setattr(text_notes, "written_notes", writing)
    out = tmp_path / "text"
    record = train(out, 1, "--graph", "text_mas", "--notes-max-tokens", "8")
    assert record["status"] == "finished" and record["steps"] == 1
    assert len(written) == 4 and all(f"[{agent}]" in notes for notes in written
                                     for agent in UPSTREAM)  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(checkpoint_for("smollm2"))
    assert len(final_reads) == 2  # one step of two problems
    for read in final_reads:  # the final agent reads one problem's notes, and no latents
        assert read["cache"] == 0
        assert sum(notes in tokenizer.decode(read["ids"]) for notes in written) == 1
    upstream = record["chain"]["upstream"]
    assert [a["agent"] for a in upstream] == ["planner", "critic", "refiner"]
    assert all(a["writes_text"] for a in upstream)
    adapter = str(out / "adapter")
    settings = {"roles": {"judger": {"adapter": adapter}}}
    plan = plan_run(load_bundled("text_mas"), settings, BackendSpec(kind="hf", model="smollm2"))
    router = plan_router(plan)
    assert router.model_for("judger").adapter == adapter  # the trained final agent
    assert router.model_for("planner").adapter is None  # the others on the base weights
    served = BackendSpec(kind="openai", base_url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(ValueError, match="needs the hf backend"):
        plan_run(load_bundled("text_mas"), settings, served)


def test_a_topology_without_a_final_chain_agent_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["train", "latent", "gsm8k", "--graph", "majority_vote",
                                      "--out", str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code != 0
    assert "has 0 final agents" in result.output and "Traceback" not in result.output
