"""The live progress display: iteration, stage, calls done/total and tokens, from the stream."""

from __future__ import annotations

import pytest

from tmas import build_tmas_graph
from tmas.api import build_graph
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.estimate import estimate_run_calls
from tmas.lifecycle.progress import ProgressDisplay, ProgressTracker
from tmas.llm.router import ModelRouter
from tmas.testing.fake_chat import ScriptedChatModel


def test_display_follows_a_run_stage_by_stage(capsys: pytest.CaptureFixture[str]) -> None:
    config = TMASConfig(n_candidates=2, n_verifications=2, max_iterations=2)
    graph = build_tmas_graph(config, llm=ScriptedChatModel())
    total = config.calls_per_iteration() * config.max_iterations
    tracker = ProgressTracker(total, config.max_iterations, pipelines=["candidate"])
    with ProgressDisplay(tracker) as display:
        for namespace, mode, chunk in graph.stream(
            {"problem": "What is 9 + 9?"}, stream_mode=["tasks", "updates"], subgraphs=True
        ):
            display.observe(mode, chunk, namespace)
    lines = capsys.readouterr().err.splitlines()
    stages = [line.split(" | ")[1] for line in lines]
    for stage in ("planning", "solving", "verifying", "summarizing", "reflecting", "voting"):
        assert stage in stages
    assert lines[-1].startswith("iteration 2/2 | voting")
    assert tracker.calls == total
    assert tracker.tokens > 0
    assert f"calls {total}/{total}" in lines[-1]


def test_tracker_starts_from_a_saved_state() -> None:
    saved = {
        "iteration": 2,
        "usage": {"solver": {"calls": 3, "input_tokens": 10, "output_tokens": 5}},
        "final_answer": "18",
    }
    tracker = ProgressTracker(10, 3, saved)
    assert (tracker.iteration, tracker.calls, tracker.tokens) == (2, 3, 15)
    assert tracker.line() == "iteration 2/3 | starting | calls 3/10 | tokens 15"


@pytest.mark.parametrize("passed", [True, False])
def test_generation_kwargs_can_be_switched_off(passed: bool) -> None:
    model = ScriptedChatModel()
    config = TMASConfig(n_candidates=1, n_verifications=1, max_iterations=1)
    build_tmas_graph(config, llm=model, pass_generation_kwargs=passed).invoke({"problem": "1+1?"})
    seen = [call.kwargs for call in model.log]
    assert seen
    if passed:
        assert all({"max_tokens", "seed", "temperature"} <= set(kw) for kw in seen)
    else:
        assert all(not ({"max_tokens", "seed", "temperature"} & set(kw)) for kw in seen)


@pytest.mark.parametrize("name", ["pacore", "rsa", "self_refine", "verify_refine", "tmas"])
def test_progress_total_is_exactly_the_calls_of_a_run(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = load_bundled(name)
    config = TMASConfig(n_candidates=8, n_verifications=2, max_iterations=3, max_retries=0)
    graph = build_graph(spec, llm=ModelRouter(ScriptedChatModel()), config=config)
    tracker = ProgressTracker(estimate_run_calls(spec, config), config.max_iterations)
    with ProgressDisplay(tracker) as display:
        for mode, chunk in graph.stream({"problem": "9 + 9?"}, stream_mode=["tasks", "updates"]):
            display.observe(mode, chunk)
    assert tracker.calls == tracker.total_calls
    if name == "pacore":
        assert tracker.total_calls == 8 + 8 + 1  # the last round is one sample
    last = capsys.readouterr().err.splitlines()[-1]
    assert f"calls {tracker.calls}/{tracker.calls} " in last


def test_progress_of_a_topology_with_data_dependent_calls_says_at_most() -> None:
    spec = load_bundled("delm")
    config = TMASConfig(n_candidates=2, max_iterations=1)
    tracker = ProgressTracker(estimate_run_calls(spec, config), config.max_iterations)
    assert f"calls 0/<={tracker.total_calls} " in tracker.line()
