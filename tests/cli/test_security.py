"""What runs leave behind and print: API keys nowhere (database, output, trace page, results),
and model text never reaching the terminal as raw escape sequences."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import PROBLEM, db_path, invoke
from typer.testing import Result

from tmas.roles import Role
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.scripted import ScriptedReplies

SMALL = ("--model", "scripted", "-n", "2", "-m", "1", "-t", "2")
HOSTILE = "\x1b[2J\x1b]0;title\x07[red]x[/red]\x9b31m"


@dataclass(frozen=True)
class HostileReplies(ScriptedReplies):
    """Scripted replies whose answers, summaries, experiences and guidelines carry terminal
    escape sequences and rich markup (the verifier's verdict stays parseable)."""

    answers: tuple[str, ...] = (f"18{HOSTILE}",)

    def reply(
        self, role: Role | None, system: str, user: str, salt: str = "", prompt: str | None = None
    ) -> str:
        text = super().reply(role, system, user, salt, prompt)
        if role in ("summary", "experience", "guideline"):
            return "\n".join(line.replace(": ", f": {HOSTILE} ", 1) for line in text.splitlines())
        return text


def write_data(folder: Path) -> Path:
    data = folder / "data.jsonl"
    data.write_text(
        '{"id": "p1", "problem": "What is 9 + 9?", "answer": "18"}\n'
        '{"id": "p2", "problem": "What is 10 + 8?", "answer": "18"}\n',
        encoding="utf-8",
    )
    return data


def output_of(result: Result) -> bytes:
    return result.stdout_bytes + (result.stderr_bytes or b"")


# ---- API keys ------------------------------------------------------------------------------


class KeyRecordingServer(FakeOpenAIServer):
    """The scripted server, noting the ``Authorization`` header of every chat completion."""

    def __init__(self) -> None:
        super().__init__()
        self.authorizations: set[str] = set()

    def _serve_completion(self, handler: Any, *args: Any, **kwargs: Any) -> None:
        self.authorizations.add(str(handler.headers.get("Authorization")))
        super()._serve_completion(handler, *args, **kwargs)


@pytest.fixture
def secrets() -> dict[str, str]:
    """A unique key in each environment variable a backend may read it from."""
    tag = uuid.uuid4().hex
    return {"TMAS_API_KEY": f"sk-test-SECRET-tmas-{tag}", "OPENAI_API_KEY": f"sk-test-SECRET-{tag}"}


def files_under(folder: Path) -> Iterator[Path]:
    return (path for path in folder.rglob("*") if path.is_file())


@pytest.mark.parametrize("key_env", ["TMAS_API_KEY", "OPENAI_API_KEY"])
def test_api_keys_appear_in_no_file_and_no_output(
    tmp_path: Path, secrets: dict[str, str], key_env: str
) -> None:
    env = {name: (value if name == key_env else None) for name, value in secrets.items()}
    home, out, page = tmp_path / "home", tmp_path / "eval", tmp_path / "trace.html"
    outputs: list[Result] = []
    with KeyRecordingServer() as server:
        roles = ("--role-base-url", f"verifier={server.base_url}", "--role-model", "summary=other")
        common = ("--base-url", server.base_url, *SMALL, *roles)
        outputs.append(invoke(home, "solve", PROBLEM, *common, "--run-id", "k1", env=env))
        outputs.append(invoke(home, "solve", PROBLEM, *common, "--stream", "--json", env=env))
        data = str(write_data(tmp_path))
        outputs.append(invoke(home, "eval", "--out", str(out), "--data", data, *common, env=env))
    assert server.authorizations == {f"Bearer {secrets[key_env]}"}  # the key was in use
    outputs.append(invoke(home, "show", "k1", "--json", env=env))
    outputs.append(invoke(home, "show", "k1", env=env))
    outputs.append(invoke(home, "runs", env=env))
    outputs.append(invoke(home, "trace", "k1", "--html", str(page), env=env))
    assert [r.exit_code for r in outputs] == [0] * len(outputs), [r.output for r in outputs]
    assert db_path(home).exists() and page.exists() and (out / "summary.json").exists()

    marker = secrets[key_env].encode()
    assert marker[-32:] not in b"".join(output_of(r) for r in outputs)
    leaked = [path for path in files_under(tmp_path) if marker[-32:] in path.read_bytes()]
    assert leaked == []


# ---- terminal escape sequences --------------------------------------------------------------


def assert_no_escape(result: Result) -> None:
    assert result.exit_code == 0, result.output
    shown = output_of(result)
    assert b"\x1b" not in shown and b"\x07" not in shown and "\x9b".encode() not in shown


def test_model_text_reaches_the_terminal_without_escape_sequences(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeOpenAIServer(HostileReplies()) as server:
        common = ("--base-url", server.base_url, *SMALL)
        solved = invoke(home, "solve", PROBLEM, *common, "--run-id", "h1", "--stream")
        data = str(write_data(tmp_path))
        evaluated = invoke(home, "eval", "--out", str(tmp_path / "eval"), "--data", data, *common)
    shown = invoke(home, "show", "h1")
    listed = invoke(home, "runs")
    as_json = invoke(home, "show", "h1", "--json")
    for result in (solved, evaluated, shown, listed, as_json):
        assert_no_escape(result)

    # The model's text is there, made plain: markup printed as text, not interpreted.
    assert "[red]x[/red]" in solved.stdout  # the answer line and the iteration table
    assert "+ experience from candidate" in solved.stderr  # --stream showed the banks
    assert "[red]x[/red]" in solved.stderr
    assert "[red]x[/red]" in shown.stdout
    assert "[red]x[/red]" in evaluated.stderr  # the per-problem progress lines
    assert "\\u001b[2J" in as_json.stdout  # JSON keeps the text, escaped
