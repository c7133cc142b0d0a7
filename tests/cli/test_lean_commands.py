"""Commands that only look at something answer without loading the engine: drawing and listing
topologies, and every command's --help, import neither LangGraph nor LangChain's model stack
nor the OpenAI SDK."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("langgraph", "langchain_core", "langchain_openai", "openai", "langsmith")
PROBE = """
import json, sys
heavy = set(json.loads(sys.argv[2]))
from tmas.cli.entry import main
sys.argv = ["tmas", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as stop:
    code = stop.code or 0
else:
    code = 0
loaded = sorted({name.split(".")[0] for name in sys.modules} & heavy)
print("LOADED", json.dumps({"code": code, "loaded": loaded}))
"""


def loaded_by(argv: list[str]) -> dict:
    """What running ``tmas argv`` in a fresh process imported of the heavy packages."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(HEAVY)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    line = next(x for x in done.stdout.splitlines()[::-1] if x.startswith("LOADED"))
    return json.loads(line.split(" ", 1)[1])


@pytest.mark.parametrize(
    "argv",
    [
        ["graphs"],
        ["graph", "tmas"],
        ["graph", "pacore", "--format", "mermaid"],
        ["--help"],
        ["runs", "--help"],
        ["show", "--help"],
        ["memory", "ls", "--help"],
        ["solve", "--help"],
    ],
)
def test_a_command_that_only_looks_loads_no_engine(argv: list[str]) -> None:
    found = loaded_by(argv)
    assert found["code"] == 0
    assert found["loaded"] == []


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A run database holding one finished run and the memory it kept (made in this process,
    with the engine)."""
    from typer.testing import CliRunner

    from tmas.cli import app
    from tmas.testing.fake_openai_server import FakeOpenAIServer

    db = str(tmp_path_factory.mktemp("lean") / "runs.sqlite")
    with FakeOpenAIServer() as server:
        done = CliRunner().invoke(
            app,
            ["solve", "-n", "1", "-m", "1", "-t", "1", "--db", db, "--base-url", server.base_url,
             "--model", "scripted", "--memory", "lean", "--json", "What is 9 + 9?"],
        )  # fmt: skip
    assert done.exit_code == 0, done.output
    return db, json.loads(done.output[done.output.index("{") :])["run_id"]


@pytest.mark.parametrize(
    "argv",
    [["runs"], ["show", "{run}"], ["show", "{run}", "--json"], ["memory", "ls"],
     ["memory", "show", "lean"]],
)  # fmt: skip
def test_listing_and_showing_saved_runs_loads_no_engine(
    saved_run: tuple[str, str], argv: list[str]
) -> None:
    db, run_id = saved_run
    found = loaded_by([word.format(run=run_id) for word in argv] + ["--db", db])
    assert found["code"] == 0
    assert found["loaded"] == []


def test_the_probe_sees_the_engine_when_a_command_loads_it() -> None:
    # the check above can fail: a command that builds a graph shows up here
    found = loaded_by(["graph", "no-such-topology"])
    assert found["code"] != 0
    import_anything = subprocess.run(
        [sys.executable, "-c", PROBE.replace("from tmas.cli.entry import main",
                                              "import tmas.api\nfrom tmas.cli.entry import main"),
         json.dumps(["graphs"]), json.dumps(HEAVY)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "langgraph" in import_anything.stdout
