"""The README is a short front door: the two commands first (install and solve; install and
test, the same command CI runs), and a Python example that runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tmas.testing.fake_openai_server import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def blocks(language: str) -> list[str]:
    return re.findall(
        rf"^```{language}\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M
    )


def test_the_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 150


def test_the_two_commands_come_first() -> None:
    text = README.read_text(encoding="utf-8")
    solve, test = blocks("bash")[:2]
    assert solve.startswith('python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[')
    assert "&& tmas solve " in solve
    assert test.strip() == "bash .ci/run"
    assert text.index(test) < text.index("\n## ")  # before the first section


def test_ci_runs_the_readme_test_command() -> None:
    """CI runs ``.ci/run``, which installs the Debian packages the tests need and then runs
    ruff, the import contracts and the whole suite."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for needed in (
        "postgresql",
        "chromium",
        "sudo",
        "ruff check .",
        "lint-imports",
        "python -m pytest",
    ):
        assert needed in script, needed


@pytest.mark.slow
def test_the_python_example_runs_as_written(tmp_path: Path) -> None:
    """The README's Python example, unchanged, against a scripted OpenAI-compatible server
    (``TMAS_BASE_URL``) instead of the embedded model."""
    (example,) = blocks("python")
    (tmp_path / "example.py").write_text(example, encoding="utf-8")
    with FakeOpenAIServer() as server:
        env = {key: value for key, value in os.environ.items() if key != "TMAS_DB"}
        env.update(
            TMAS_BASE_URL=server.base_url, TMAS_MODEL="scripted", TMAS_HOME=str(tmp_path / "home")
        )
        done = subprocess.run(
            [sys.executable, "example.py"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert re.search(r" \[[01]\.0, [01]\.0\]$", first), first  # Pass@1 of both iterations
    assert second.strip(), "no final answer"
    assert (tmp_path / "runs.sqlite").exists()
