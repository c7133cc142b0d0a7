"""A run's settings reach the wire as its plan says, however the run was asked for: each
request a scripted server receives carries the model, answer budget and temperature of its
role's binding in the plan ``tmas show --json`` prints (solve, fork with a changed role
setting, eval, resume with a corrected model, and a served request)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli_helpers import invoke
from tmas.graphs.bundled import load_bundled
from tmas.llm.backend import BackendSpec
from tmas.serve.service import ChatService
from tmas.testing.fake_openai_server import FakeOpenAIServer

PROBLEM = "What is 9 + 9?"
ROLE_SETTINGS = json.dumps(
    {"verifier": {"temperature": 0.0, "max_tokens": 40}, "summary": {"temperature": 1.1}}
)
SIZES = ("-n", "2", "-m", "1", "-t", "2")


def shown_plan(home: Path, run_id: str) -> dict[str, Any]:
    """The plan ``tmas show RUN_ID --json`` prints."""
    result = invoke(home, "show", run_id, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["plan"]


def budget_of(body: dict[str, Any]) -> int | None:
    """The answer budget a chat completion request asks for."""
    return body.get("max_completion_tokens", body.get("max_tokens"))


def assert_on_the_wire(requests: list[dict[str, Any]], plan: dict[str, Any]) -> set[str]:
    """Every request carries its role's model, budget and temperature from ``plan``; the
    roles seen."""
    assert requests, "no request reached the server"
    roles = set()
    for body in requests:
        role = body["tmas"]["role"]
        binding = plan["bindings"][role]
        sent = (body["model"], budget_of(body), body.get("temperature"))
        assert sent == (binding["model"], binding["max_tokens"], binding["temperature"]), role
        roles.add(role)
    return roles


def test_solve_and_a_fork_with_a_changed_role_setting_send_what_their_plans_say(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    with FakeOpenAIServer() as server:
        solved = invoke(
            home, "solve", PROBLEM, "--base-url", server.base_url, "--model", "scripted",
            "--role-model", "verifier=judge", "--temperature", "0.5", "--max-tokens", "90",
            "--set", f"roles={ROLE_SETTINGS}", "--set", "experience_max_tokens=33",
            *SIZES, "--quiet", "--run-id", "s1",
        )  # fmt: skip
        assert solved.exit_code == 0, solved.output
        plan = shown_plan(home, "s1")
        seen = assert_on_the_wire(server.requests, plan)
        assert seen == {"solver", "verifier", "summary", "experience", "guideline"}
        bindings = plan["bindings"]
        assert (bindings["verifier"]["model"], bindings["verifier"]["max_tokens"]) == ("judge", 40)
        assert (bindings["solver"]["max_tokens"], bindings["solver"]["temperature"]) == (90, 0.5)
        assert bindings["experience"]["max_tokens"] == 33
        assert bindings["summary"]["temperature"] == 1.1

        before = len(server.requests)
        forked = invoke(
            home, "fork", "s1", "--iteration", "1", "--run-id", "f1", "--quiet",
            "--set", 'roles={"summary": {"temperature": 0.2, "max_tokens": 20}}',
        )  # fmt: skip
        assert forked.exit_code == 0, forked.output
        fork_plan = shown_plan(home, "f1")
        assert_on_the_wire(server.requests[before:], fork_plan)
        summary = fork_plan["bindings"]["summary"]
        assert (summary["temperature"], summary["max_tokens"]) == (0.2, 20)
        assert fork_plan["bindings"]["verifier"] == bindings["verifier"]  # kept from the parent


def test_a_resume_with_a_corrected_model_sends_the_corrected_plan(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeOpenAIServer(served_models=("scripted", "judge")) as server:
        stopped = invoke(
            home, "solve", PROBLEM, "--base-url", server.base_url, "--model", "scripted",
            "--role-model", "verifier=no-such-judge", *SIZES, "--quiet", "--run-id", "r1",
        )  # fmt: skip
        assert stopped.exit_code != 0
        assert "no-such-judge" in " ".join(stopped.output.split())
        before = len(server.requests)
        resumed = invoke(home, "resume", "r1", "--role-model", "verifier=judge", "--quiet")
        assert resumed.exit_code == 0, resumed.output
        plan = shown_plan(home, "r1")
        assert plan["bindings"]["verifier"]["model"] == "judge"
        assert "verifier" in assert_on_the_wire(server.requests[before:], plan)


def test_every_run_of_an_evaluation_sends_what_its_plan_says(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "eval"
    data = tmp_path / "problems.jsonl"
    rows = [{"id": f"p{i}", "problem": f"What is {i} + {i}?", "answer": str(2 * i)} for i in (1, 2)]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with FakeOpenAIServer() as server:
        evaluated = invoke(
            home, "eval", "--data", str(data), "--out", str(out), "--base-url", server.base_url,
            "--model", "scripted", "--role-model", "summary=judge", "--temperature", "0.3",
            "--set", "verifier_max_tokens=21", *SIZES, "--quiet",
        )  # fmt: skip
        assert evaluated.exit_code == 0, evaluated.output
        problems = {row["id"]: row["problem"] for row in rows}
        results = [json.loads(line) for line in (out / "results.jsonl").open()]
        assert sorted(result["id"] for result in results) == ["p1", "p2"]
        for result in results:
            plan = shown_plan(home, result["run_id"])
            problem = json.dumps(problems[result["id"]])[1:-1]
            mine = [r for r in server.requests if problem in json.dumps(r["messages"])]
            assert_on_the_wire(mine, plan)
            assert plan["bindings"]["verifier"]["max_tokens"] == 21
            assert plan["bindings"]["summary"]["model"] == "judge"
            assert plan["bindings"]["solver"]["temperature"] == 0.3


def test_a_served_request_runs_with_the_settings_it_and_the_server_set(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with FakeOpenAIServer() as server:
        backend = BackendSpec(kind="openai", base_url=server.base_url, model="scripted")
        service = ChatService(
            backend,
            {"tmas": load_bundled("tmas")},
            db=home / "runs.sqlite",
            roles={"verifier": {"model": "judge", "temperature": 0.0}},
        )
        try:
            body = service.complete_sync({
                "model": "tmas", "messages": [{"role": "user", "content": PROBLEM}],
                "temperature": 0.4, "max_tokens": 70, "n_candidates": 2, "n_verifications": 1,
                "max_iterations": 1, "summary_max_tokens": 25,
            })  # fmt: skip
        finally:
            service.close()
        run_id = body["tmas"]["run_ids"][0]
        plan = shown_plan(home, run_id)
        assert assert_on_the_wire(server.requests, plan) >= {"solver", "verifier", "summary"}
        bindings = plan["bindings"]
        assert (bindings["solver"]["max_tokens"], bindings["solver"]["temperature"]) == (70, 0.4)
        assert (bindings["verifier"]["model"], bindings["verifier"]["temperature"]) == ("judge", 0)
        assert bindings["summary"]["max_tokens"] == 25
