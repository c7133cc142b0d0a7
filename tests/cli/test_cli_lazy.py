"""``tmas --help`` lists every command without importing one; a command runs as before."""

from __future__ import annotations

import subprocess
import sys

import typer
from typer.testing import CliRunner

from tmas.cli import app
from tmas.cli.app import TmasCommands
from tmas.cli.lazy import load_command

HEAVY = ("langgraph", "langchain_core", "langsmith", "numpy", "networkx", "torch", "yaml")


def test_the_listing_imports_no_heavy_module() -> None:
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from tmas.cli import app\n"
        "result = CliRunner().invoke(app, ['--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert loaded == []


def test_every_command_is_listed_with_its_own_summary() -> None:
    listing = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    for entry in TmasCommands.ENTRIES:
        command = load_command(entry)
        assert entry.name in listing
        text = " ".join((command.help or "").split())
        assert text.startswith(entry.summary.rstrip(".")), entry.name  # the summary cannot drift


def test_a_command_and_a_group_run_after_loading() -> None:
    graphs = CliRunner().invoke(app, ["graphs"])
    assert graphs.exit_code == 0 and "tmas" in graphs.output
    group = CliRunner().invoke(app, ["train", "--help"])
    assert group.exit_code == 0 and "latent" in group.output
    unknown = CliRunner().invoke(app, ["solv"], env={"COLUMNS": "200"})
    assert unknown.exit_code == 2 and "No such command 'solv'" in unknown.output
    assert "Did you mean 'solve'?" in unknown.output
    assert isinstance(typer.main.get_command(app), TmasCommands)


def test_the_program_imports_its_command_with_the_collector_off_and_freezes_it() -> None:
    code = (
        "import gc, sys\n"
        "from unittest import mock\n"
        "from tmas.cli import entry\n"
        "sys.argv = ['tmas', 'graphs']\n"
        "seen = {}\n"
        "def fake_app():\n"
        "    seen['enabled'] = gc.isenabled()\n"
        "    seen['frozen'] = gc.get_freeze_count()\n"
        "    seen['loaded'] = 'tmas.cli.graphs' in sys.modules\n"
        "with mock.patch('tmas.cli.app.app', fake_app):\n"
        "    entry.main()\n"
        "print(seen['enabled'], seen['frozen'] > 1000, seen['loaded'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]
