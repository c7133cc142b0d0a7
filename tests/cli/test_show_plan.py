"""``tmas show`` and the viewer say what a run did: each role's binding (model, budget,
temperature), why the run stopped, its channels' values, and with ``--prompts`` every template
the run rendered (overrides marked), not only the overrides."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_helpers import invoke
from tmas.testing.fake_openai_server import FakeOpenAIServer

PROBLEM = "What is 9 + 9?"


def test_show_and_the_viewer_print_bindings_stop_reason_channels_and_every_template(
    tmp_path: Path,
) -> None:
    home, prompts = tmp_path / "home", tmp_path / "prompts.yaml"
    prompts.write_text("solver/system: Answer briefly and box it.\n", encoding="utf-8")
    with FakeOpenAIServer() as server:
        solved = invoke(
            home, "solve", PROBLEM, "--base-url", server.base_url, "--model", "scripted",
            "--prompts", str(prompts), "--set", "verifier_max_tokens=48", "-n", "2", "-m", "1",
            "-t", "1", "--quiet", "--run-id", "r",
        )  # fmt: skip
    assert solved.exit_code == 0, solved.output
    shown = invoke(home, "show", "r", "--prompts")
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    assert "roles (model, answer budget, temperature):" in text
    assert "verifier     openai:scripted @ " in text and "max 48 tokens, temperature 0.7" in text
    assert "proof_judge" in text and "model of verifier" in text
    assert "stopped: max_iterations" in text and "channel extras: " in text
    assert "prompts overridden: solver/system" in text
    assert "--- solver/system (overridden)\nAnswer briefly and box it." in text
    assert "--- verifier/user\n" in text and "--- summary/user\n" in text  # not overridden
    assert "--- delm/" not in text  # rendered by no node of this run
    as_json = json.loads(invoke(home, "show", "r", "--json").stdout)
    assert as_json["stop_reason"] == "max_iterations" and "extras" in as_json["channels"]

    page = tmp_path / "r.html"
    traced = invoke(home, "trace", "r", "--html", str(page))
    assert traced.exit_code == 0, traced.output
    html = page.read_text(encoding="utf-8")
    assert "roles (what each role" in html and "<td>48</td>" in html
    assert '<details class="channels" open><summary>channels</summary>' in html
    assert "(max_iterations)" in html  # the status says why it stopped
