"""The recipes of ``docs/extending.md``, run as a user would: every file on the page is
written to a fresh directory and every command runs there, with the installed ``tmas`` in a
subprocess and no path tricks (plugins load from the current directory or by file path); each
plugin imports only the public plugin API (``tmas.plugin``)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tmas.lifecycle.history import saved_state
from tmas.storage import open_storage
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.scripted import ScriptedReplies

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"
BLOCK = re.compile(r"<!-- (file: (?P<name>\S+)|run) -->\n```\w*\n(?P<body>.*?)\n```", re.S)

pytestmark = pytest.mark.slow


@dataclass
class Recipe:
    """One section of the page: its files (name -> text) and its commands."""

    title: str
    files: dict[str, str] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)


def recipes() -> dict[str, Recipe]:
    """The page's recipes by their letter."""
    found: dict[str, Recipe] = {}
    for section in re.split(r"\n(?=## )", DOC.read_text(encoding="utf-8")):
        head = re.match(r"## \((\w)\) (.*)", section)
        if not head:
            continue
        recipe = found.setdefault(head.group(1), Recipe(head.group(2)))
        for block in BLOCK.finditer(section):
            if block.group("name"):
                recipe.files[block.group("name")] = block.group("body") + "\n"
            else:  # one command a line; a line ending in a backslash goes on
                joined = block.group("body").replace("\\\n", " ")
                recipe.commands += [line for line in joined.splitlines() if line.strip()]
    return found


def tmas_bin() -> str:
    """The installed console script beside this interpreter."""
    found = Path(sys.executable).with_name("tmas")
    assert found.exists(), "the tmas console script is not installed"
    return str(found)


def run_recipe(letter: str, folder: Path, env_extra: dict[str, str]) -> list[str]:
    """Write recipe ``letter``'s files into ``folder`` and run its commands there; the output
    of each command, which must succeed."""
    recipe = recipes()[letter]
    for name, text in recipe.files.items():
        (folder / name).write_text(text, encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "TMAS_DB")}
    env.update(
        TMAS_HOME=str(folder / "home"),
        PATH=f"{Path(tmas_bin()).parent}{os.pathsep}{env.get('PATH', '')}",
        **env_extra,
    )
    outputs = []
    for command in recipe.commands:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", command],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        outputs.append(done.stdout + done.stderr)
    return outputs


def first_json(text: str) -> dict:
    """The first JSON object printed in ``text``."""
    return json.JSONDecoder().raw_decode(text, text.index("{"))[0]


def budget(request: dict) -> int | None:
    """The answer-length limit a chat-completion request asked for."""
    return request.get("max_completion_tokens", request.get("max_tokens"))


def show_json(folder: Path, run_id: str) -> dict:
    done = subprocess.run(
        [tmas_bin(), "show", run_id, "--json"],
        cwd=folder,
        env={**os.environ, "TMAS_HOME": str(folder / "home")},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.fixture
def server() -> FakeOpenAIServer:
    with FakeOpenAIServer(replies=ScriptedReplies(answers=("42", "41", "15", "7"))) as fake:
        yield fake


@pytest.fixture
def served(server: FakeOpenAIServer) -> dict[str, str]:
    return {"TMAS_BASE_URL": server.base_url, "TMAS_MODEL": "scripted"}


def test_the_page_has_seven_recipes_each_with_files_and_commands() -> None:
    found = recipes()
    assert sorted(found) == ["a", "b", "c", "d", "e", "f", "g"]
    for recipe in found.values():
        assert recipe.files and recipe.commands, recipe.title


IMPORT = re.compile(r"^\s*(?:from\s+(\S+)\s+import|import\s+(\S+))", re.M)


def test_every_recipe_imports_only_the_public_api() -> None:
    """A plugin on the page imports ``tmas.plugin`` (a script, the ``tmas`` API); a recipe
    importing an internal module would break with the next refactor."""
    imported = {
        (name, module)
        for recipe in recipes().values()
        for name, text in recipe.files.items()
        if name.endswith(".py")
        for found in IMPORT.findall(text)
        for module in found
        if module.split(".")[0] == "tmas"
    }
    assert imported, "the recipes import nothing of tmas"
    public = ("tmas", "tmas.plugin")
    assert {(name, module) for name, module in imported if module not in public} == set()


def test_a_new_role_with_its_own_prompt_and_model(
    tmp_path: Path, server: FakeOpenAIServer, served: dict[str, str]
) -> None:
    (show_output,) = run_recipe("a", tmp_path, served)[-1:]
    judged = [r for r in server.requests if (r.get("tmas") or {}).get("role") == "judge"]
    assert len(judged) == 1
    assert judged[0]["model"] == "judge-model"  # --role-model judge=judge-model
    assert budget(judged[0]) == 256  # the budget the plugin declared
    assert "The answers found, most voted first" in judged[0]["messages"][-1]["content"]
    others = {r["model"] for r in server.requests if r not in judged}
    assert others == {"scripted"}
    state = show_json(tmp_path, "judged")
    assert state["usage"]["judge"]["calls"] == 1
    assert "judge" in state["extras"]
    assert re.search(r"judge\W+1\b", show_output)  # its own row in the usage table


def test_a_built_in_prompt_overridden_from_a_file(
    tmp_path: Path, server: FakeOpenAIServer, served: dict[str, str]
) -> None:
    show_output = run_recipe("b", tmp_path, served)[-1]
    systems = {
        (r["tmas"]["role"], r["messages"][0]["content"]) for r in server.requests if r.get("tmas")
    }
    solver = {text for role, text in systems if role == "solver"}
    assert solver and all(text.startswith("You are a meticulous competition") for text in solver)
    assert all("\\boxed{answer}" in text for text in solver)  # {{ }} is a literal brace
    assert any(
        role == "verifier" and text.startswith("You are a strict grader") for role, text in systems
    )
    assert "solver/system" in show_output and "meticulous competition" in show_output


def test_a_planner_a_selection_rule_and_a_stop_condition(
    tmp_path: Path, served: dict[str, str]
) -> None:
    diagram, solved = run_recipe("c", tmp_path, served)
    assert "loop until not (run_finished or checks_agree)" in diagram
    state = first_json(solved)
    assert state["selection"] == "confident_vote"
    assert state["stop_reason"] == "checks_agree"  # scripted checks score 0.8 >= 0.75
    assert len(state["history"]) == 1


def test_a_planner_repairs_the_best_rollout_when_the_loop_goes_on(
    tmp_path: Path, served: dict[str, str]
) -> None:
    recipe = recipes()["c"]
    for name, text in recipe.files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    spec = (tmp_path / "tmas_repair_best.yaml").read_text(encoding="utf-8")
    (tmp_path / "tmas_repair_best.yaml").write_text(
        spec.replace("until: [run_finished, checks_agree]", "until: run_finished"),
        encoding="utf-8",
    )
    env = {**os.environ, "TMAS_HOME": str(tmp_path / "home"), **served}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [
            tmas_bin(),
            "solve",
            "What is 7 + 8?",
            "--graph",
            "tmas_repair_best.yaml",
            "--plugin",
            "best_first",
            "-n",
            "4",
            "-m",
            "1",
            "-t",
            "2",
            "--quiet",
            "--json",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stdout)
    assert state["history"][1]["modes"] == ["exploit", "exploit", "exploit", "explore"]


def test_a_new_topology_from_existing_and_new_nodes(
    tmp_path: Path, server: FakeOpenAIServer, served: dict[str, str]
) -> None:
    outputs = run_recipe("d", tmp_path, served)
    state = first_json(outputs[0])
    assert state["selection"] == "best_scored_last"
    assert len(state["history"]) == 1  # the spec's own config: one round
    assert state["usage"]["reporter"]["calls"] == 1
    assert state["extras"]["report"]
    reports = [r for r in server.requests if (r.get("tmas") or {}).get("role") == "reporter"]
    assert len(reports) == 2 and all(budget(r) == 96 for r in reports)
    assert reports[0]["messages"][0]["content"].startswith("You explain solutions")
    answer, report = outputs[1].strip().splitlines()[-1].split(" | ", 1)
    assert answer == show_json(tmp_path, "report-py")["final_answer"] and report


def test_the_new_topology_on_the_embedded_model(tmp_path: Path) -> None:
    outputs = run_recipe("d", tmp_path, {})
    state = first_json(outputs[0])
    assert state["stop_reason"] == "max_iterations"
    assert state["usage"]["solver"]["calls"] == 2 and state["usage"]["verifier"]["calls"] == 2
    assert state["usage"]["reporter"]["calls"] == 1
    assert isinstance(state["extras"]["report"], str)


class CriticReplies(ScriptedReplies):
    """Scripted replies whose critic names the answer of the solution it read."""

    def reply(self, role, system, user, salt="", prompt=None):  # type: ignore[no-untyped-def]
        if role == "critic":
            answer = re.findall(r"\\boxed\{([^}]*)\}", user)[-1]
            return f"The step giving {answer} is doubtful."
        return super().reply(role, system, user, salt, prompt)


def test_a_new_role_between_two_existing_roles(tmp_path: Path) -> None:
    with FakeOpenAIServer(replies=CriticReplies(answers=("42", "41"))) as server:
        env = {"TMAS_BASE_URL": server.base_url, "TMAS_MODEL": "scripted"}
        show_output = run_recipe("e", tmp_path, env)[-1]
        requests = [r for r in server.requests if r.get("tmas")]
    critics = [r for r in requests if r["tmas"]["role"] == "critic"]
    assert len(critics) == 4  # 2 candidates x 2 iterations
    assert {r["model"] for r in critics} == {"critic-model"} and budget(critics[0]) == 160
    checks = [r for r in requests if r["tmas"]["role"] == "verifier"]
    assert len(checks) == 4
    for check in checks:  # each check reads the remark on its own candidate
        text = check["messages"][-1]["content"]
        answer = re.findall(r"\\boxed\{([^}]*)\}", text.partition("A critic's remark")[0])[-1]
        assert f"A critic's remark on it: The step giving {answer} is doubtful." in text
    state = show_json(tmp_path, "critic")
    assert state["usage"]["critic"]["calls"] == 4
    assert re.search(r"critic\W+4\b", show_output)


class TypoReplies(ScriptedReplies):
    """Scripted replies whose experience agent writes the same pitfall with or without typos,
    by candidate."""

    def reply(self, role, system, user, salt="", prompt=None):  # type: ignore[no-untyped-def]
        if role == "experience":
            typo = int(hashlib.sha256(user.encode()).hexdigest(), 16) % 2
            pitfall = "the unitss were droped" if typo else "the units were dropped"
            return f"- Pitfall: {pitfall}."
        return super().reply(role, system, user, salt, prompt)


def bank_of(folder: Path, run_id: str) -> list[dict]:
    storage = open_storage(folder / "home" / "runs.sqlite")
    try:
        return saved_state(storage, run_id)["experience_bank"]
    finally:
        storage.close()


def test_a_similarity_registered_by_a_plugin_dedups_the_banks(tmp_path: Path) -> None:
    with FakeOpenAIServer(replies=TypoReplies(answers=("144", "143"))) as server:
        env = {"TMAS_BASE_URL": server.base_url, "TMAS_MODEL": "scripted"}
        show_output = run_recipe("f", tmp_path, env)[-1]
        baseline = tmp_path / "jaccard"
        baseline.mkdir()
        run_recipe("f", baseline, env)  # the same recipe again, with the default measure:
        done = subprocess.run(
            [tmas_bin(), "solve", "What is 12 times 12?", "--graph", "tmas_trigram.yaml",
             "--plugin", "./trigrams.py", "-n", "3", "-m", "1", "-t", "2", "--max-tokens", "64",
             "--run-id", "words", "--quiet", "--set", "similarity=jaccard"],
            cwd=baseline, env={**os.environ, "TMAS_HOME": str(baseline / "home"), **env},
            capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    pitfalls = [e for e in bank_of(tmp_path, "trigram") if "Pitfall" in e["text"]]
    assert len(pitfalls) == 1 and pitfalls[0]["hits"] > 1  # the typo'd copies reinforce it
    words = [e for e in bank_of(baseline, "words") if "Pitfall" in e["text"]]
    assert len(words) == 2  # word sets tell the typo'd copy apart
    assert "trigrams.py (sha256 " in show_output


def test_the_plugin_similarity_also_ranks_experiences_for_repairs(tmp_path: Path) -> None:
    """In process: the measure the recipe registers is the one repairs rank experiences by
    (and dedup compares with)."""
    recipe = recipes()["f"]
    for name, text in recipe.files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    import tmas
    from tmas.registration import registry

    tmas.load_topology(str(tmp_path / "tmas_trigram.yaml"), plugins=[str(tmp_path / "trigrams.py")])
    table = registry().similarities
    held = table.entry("trigram")
    measured = held.item
    queries: list[str] = []

    def spy(query: str, texts: list[str]) -> list[float]:
        queries.append(query)
        return measured(query, texts)

    table.remove("trigram")
    table.add("trigram", spy, held.owner)
    try:
        model = ScriptedChatModel(replies=TypoReplies())
        tmas.solve("What is 12 times 12?", topology=str(tmp_path / "tmas_trigram.yaml"),
                   plugins=[str(tmp_path / "trigrams.py")], llm=model, db=tmp_path / "r.sqlite",
                   config={"n_candidates": 2, "n_verifications": 1, "max_iterations": 2,
                           "epsilon": 0.0})  # fmt: skip
    finally:
        table.remove("trigram")
        table.add("trigram", measured, held.owner)
    assert any(q.startswith("What is 12 times 12?\n") for q in queries)  # repair context
    assert any(q.startswith("Pitfall") for q in queries)  # a bank item compared for dedup


class RankerReplies(ScriptedReplies):
    """Scripted replies whose ranker puts candidate 2 first."""

    def reply(self, role, system, user, salt="", prompt=None):  # type: ignore[no-untyped-def]
        if role == "ranker":
            return "Candidate 2 checks every step.\nRanking: 2, 0, 1"
        return super().reply(role, system, user, salt, prompt)


def test_a_node_that_sees_every_candidate_steers_the_next_iteration(tmp_path: Path) -> None:
    with FakeOpenAIServer(replies=RankerReplies(answers=("12", "11", "13"))) as server:
        env = {"TMAS_BASE_URL": server.base_url, "TMAS_MODEL": "scripted"}
        state = first_json(run_recipe("g", tmp_path, env)[0])
        requests = [r for r in server.requests if r.get("tmas")]
    ranks = [r for r in requests if r["tmas"]["role"] == "ranker"]
    assert len(ranks) == 2  # once per iteration, over all candidates at once
    assert all(ranks[0]["messages"][-1]["content"].count(f"Candidate {i}:") == 1 for i in range(3))
    assert state["history"][1]["modes"] == ["ranked"] * 3
    repairs = [r for r in requests if r["tmas"].get("prompt") == "solver/ranked"]
    assert len(repairs) == 3
    for repair in repairs:
        text = repair["messages"][-1]["content"]
        assert "- 1. candidate 2 (answer " in text  # the ranking, best first
    storage = open_storage(tmp_path / "home" / "runs.sqlite")
    try:
        final = saved_state(storage, "ranked")
    finally:
        storage.close()
    assert {c["parent_index"] for c in final["candidates"]} == {2}  # the best-ranked rollout
