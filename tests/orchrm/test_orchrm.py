"""Plan reward modelling without a model: plans and plan spaces, pairs from real saved
evaluations (scripted server), refusals of mismatched artifacts and bad input, the
orchestrator's validation, and the ``--graph auto`` options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from typer.testing import CliRunner

from tmas.cli.app import app
from tmas.graphs.bundled import load_bundled
from tmas.nodes.prompts import PromptSet
from tmas.orchrm.choice import PlanChooser, sample_plans
from tmas.orchrm.orchestrator import Orchestrator, parse_plan
from tmas.orchrm.pairs import CORRECT_OVER_INCORRECT, PairsError, build_pairs, read_pairs
from tmas.orchrm.plan_space import load_plan_space, plan_space_from_data
from tmas.orchrm.plans import PlanError, make_plan, plan_from_identity
from tmas.orchrm.reward_model import RM_RECORD, RewardModelError
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.scripted import ScriptedReplies

PLANS = {
    "cot": ("majority_vote", {"n_candidates": 1}),
    "vote3": ("majority_vote", {"n_candidates": 3}),
}


def write_space(path: Path) -> Path:
    path.write_text(
        "name: test\nplans:\n"
        + "".join(
            f"  - {{name: {name}, graph: {graph}, settings: {json.dumps(settings)}}}\n"
            for name, (graph, settings) in PLANS.items()
        )
    )
    return path


def run_eval(server: FakeOpenAIServer, tmp_path: Path, name: str, data: str, model: str) -> Path:
    graph, settings = PLANS[name]
    out = tmp_path / f"eval-{name}-{model}"
    args = ["eval", "--out", str(out), "--data", data, "--graph", graph,
            "--base-url", server.base_url, "--model", model, "--db", str(tmp_path / "r.sqlite"),
            "--quiet"]  # fmt: skip
    for key, value in settings.items():
        args += ["--set", f"{key}={json.dumps(value)}"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


def test_a_plan_space_lists_and_grids_validated_plans(tmp_path: Path) -> None:
    space = plan_space_from_data(
        {"plans": [{"name": "cot", "graph": "majority_vote", "settings": {"n_candidates": 1}}],
         "grid": {"graph": ["majority_vote", "pacore"], "settings": {"n_candidates": [2, 3]}}}
    )  # fmt: skip
    assert space.names() == [
        "cot", "majority_vote[n_candidates=2]", "majority_vote[n_candidates=3]",
        "pacore[n_candidates=2]", "pacore[n_candidates=3]",
    ]  # fmt: skip
    assert len({plan.digest for plan in space.plans}) == 5
    assert (
        "n_candidates: 3" in space.plans[2].text
        and "topology: majority_vote" in space.plans[2].text
    )
    with pytest.raises(PlanError, match="same plan as cot"):
        plan = {"graph": "majority_vote", "settings": {"n_candidates": 1}}
        plan_space_from_data({"plans": [{**plan, "name": "cot"}, plan]})
    with pytest.raises(PlanError, match="no bundled topology 'nope'"):
        plan_space_from_data({"plans": [{"graph": "nope"}]})
    with pytest.raises(PlanError, match="n_candidates"):
        plan_space_from_data({"plans": [{"graph": "tmas", "settings": {"n_candidates": 0}}]})
    with pytest.raises(PlanError, match="cannot read"):
        load_plan_space(tmp_path / "missing.yaml")


def test_a_plan_reads_the_same_from_a_plan_space_and_from_an_evaluation(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        folder = run_eval(server, tmp_path, "vote3", "gsm8k", "scripted")
    identity = json.loads((folder / "identity.json").read_text())
    from_eval = plan_from_identity(identity)
    from_space = load_plan_space(write_space(tmp_path / "plans.yaml")).plans[1]
    assert from_eval.digest == from_space.digest
    assert from_eval.text == from_space.text


def test_pairs_from_two_saved_evaluations_follow_their_results(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": f"p{i}", "problem": f"What is {i} + {18 - i}?",
                                        "answer": "18"}) + "\n" for i in range(8)))  # fmt: skip
    with FakeOpenAIServer(replies=ScriptedReplies(answers=("18", "17"))) as server:
        folders = [run_eval(server, tmp_path, name, str(data), "scripted") for name in PLANS]
    found = build_pairs(folders)
    pairs, report = found.train, found.report
    results = {}
    for folder in folders:
        lines = (folder / "results.jsonl").read_text().splitlines()
        results[folder] = {row["id"]: row for row in map(json.loads, lines)}
    by_name = {folder.name: folder for folder in folders}
    expected = sum(
        results[folders[0]][f"p{i}"]["correct"] != results[folders[1]][f"p{i}"]["correct"]
        for i in range(8)
    )
    assert expected > 0 and len(pairs) == expected == report["pairs"][CORRECT_OVER_INCORRECT]
    for pair in pairs:
        assert pair["source"] == CORRECT_OVER_INCORRECT
        assert results[by_name[pair["chosen_plan"]]][pair["problem_id"]]["correct"]
        assert not results[by_name[pair["rejected_plan"]]][pair["problem_id"]]["correct"]
        assert pair["input"].startswith("What is") and pair["chosen"] != pair["rejected"]
    out = tmp_path / "pairs.jsonl"
    result = CliRunner().invoke(app, ["orchrm", "pairs", *map(str, folders), "--out", str(out),
                                      "--held-out", "0"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert read_pairs(out) == pairs


def test_mismatched_artifacts_are_refused(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        one = run_eval(server, tmp_path, "cot", "gsm8k", "scripted")
        other_model = run_eval(server, tmp_path, "vote3", "gsm8k", "other-model")
    with pytest.raises(
        PairsError, match="other models.*backend.model: 'scripted' -> 'other-model'"
    ):
        build_pairs([one, other_model])
    renamed = tmp_path / "renamed"
    renamed.mkdir()
    (renamed / "identity.json").write_text((other_model / "identity.json").read_text()
                                           .replace("other-model", "scripted"))  # fmt: skip
    rows = [json.loads(line) for line in (other_model / "results.jsonl").read_text().splitlines()]
    rows[0]["problem"] = "Another problem under the same id."
    (renamed / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(PairsError, match="has another text"):
        build_pairs([one, renamed])
    with pytest.raises(PairsError, match="not an evaluation folder"):
        build_pairs([one, tmp_path])
    result = CliRunner().invoke(app, ["orchrm", "pairs", str(one), str(other_model), "--out",
                                      str(tmp_path / "p.jsonl")])  # fmt: skip
    assert result.exit_code == 2 and "other models" in result.output
    assert not (tmp_path / "p.jsonl").exists()


def test_a_pairs_file_without_the_needed_fields_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "pairs.jsonl"
    bad.write_text(json.dumps({"input": "1+1?", "chosen": "topology: a"}) + "\n")
    result = CliRunner().invoke(app, ["orchrm", "train", str(bad), "--out", str(tmp_path / "rm")])
    assert result.exit_code == 2
    assert "line 1: no rejected" in result.output
    assert not (tmp_path / "rm" / "adapter").exists()


def test_the_orchestrator_plans_are_validated_and_invalid_ones_rejected() -> None:
    assert (
        parse_plan("```yaml\ngraph: pacore\nsettings: {round_widths: [2, 1]}\n```", "a").spec.name
        == "pacore"
    )
    for text, reason in (
        ("graph: no_such", "unknown topology"),
        ("graph: majority_vote\nsettings: {n_candidates: -1}", "n_candidates"),
        ("graph: [unclosed", "not YAML"),
        ("just prose", "expected a mapping"),
        ("graph: majority_vote\nwiring: x", "unknown key"),
    ):
        with pytest.raises(PlanError, match=reason):
            parse_plan(text, "x")
    model = FakeListChatModel(responses=["graph: majority_vote\nsettings: {n_candidates: 2}",
                                         "graph: /etc/passwd"])  # fmt: skip
    orchestrator = Orchestrator(model, ["majority_vote", "pacore"], PromptSet())
    first, second = orchestrator.propose("What is 2 + 2?", 2)
    assert first.plan is not None and first.plan.config.n_candidates == 2
    assert second.plan is None and "unknown topology" in (second.rejected or "")


def fake_reward_model(folder: Path, plans: dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    record = {"input_format": 1, "base_model": "smollm2", "plans": plans}
    (folder / RM_RECORD).write_text(json.dumps(record))
    return folder


def test_a_reward_model_for_another_plan_space_is_refused(tmp_path: Path) -> None:
    space = load_plan_space(write_space(tmp_path / "plans.yaml"))
    known = {space.plans[0].digest: "cot"}
    folder = fake_reward_model(tmp_path / "rm", known)
    with pytest.raises(RewardModelError, match="another plan space.*vote3"):
        PlanChooser(str(folder), space=space)
    PlanChooser(str(folder), space=space, allow_unseen=True)  # asked for: accepted
    result = CliRunner().invoke(app, ["solve", "What is 2 + 2?", "--graph", "auto", "--plan-space",
                                      str(tmp_path / "plans.yaml"), "--reward-model", str(folder),
                                      "--db", str(tmp_path / "r.sqlite")])  # fmt: skip
    assert result.exit_code == 2 and "another plan space" in result.output
    assert not (tmp_path / "r.sqlite").exists()  # nothing run, nothing saved


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-n", "3"], "put n_candidates in the plan space"),
        (["--set", "epsilon=0.5"], "put --set in the plan space"),
        ([], "needs --reward-model"),
    ],
)
def test_auto_refuses_options_that_would_change_the_scored_plan(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    args = ["solve", "What is 2 + 2?", "--graph", "auto", "--plan-space", "p.yaml", *extra]
    if "needs" not in message:
        args += ["--reward-model", "rm"]
    result = CliRunner().invoke(app, [*args, "--db", str(tmp_path / "r.sqlite")])
    assert result.exit_code == 2 and message in result.output


def test_plan_options_need_graph_auto(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["solve", "What is 2 + 2?", "--reward-model", "rm",
                                      "--db", str(tmp_path / "r.sqlite")])  # fmt: skip
    assert result.exit_code == 2 and "need --graph auto" in result.output


def test_k_plans_are_sampled_per_problem_reproducibly() -> None:
    plans = tuple(make_plan(f"mv{n}", load_bundled("majority_vote"), {"n_candidates": n})
                  for n in range(1, 7))  # fmt: skip
    first = sample_plans(plans, 3, "What is 2 + 2?", seed=0)
    assert len(first) == 3 and first == sample_plans(plans, 3, "What is 2 + 2?", seed=0)
    assert {p.name for p in first} < {p.name for p in plans}
