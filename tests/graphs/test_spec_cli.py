"""A bad topology from the command line: a non-zero exit, the problem named, no run created."""

from pathlib import Path
from typing import Any

import pytest
import yaml
from spec_helpers import edge, node, one_line, spec_of
from typer.testing import CliRunner, Result

from tmas.cli import app
from tmas.storage.run_registry import RunRegistry
from tmas.storage.sqlite import connect

# ---- through the command line: a non-zero exit, the problem named, no run created ----------


def invoke(home: Path, *args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"TMAS_HOME": str(home)})


def write_yaml(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


CLI_CASES: dict[str, tuple[Any, str]] = {
    "unknown node type": (
        spec_of(
            [node("mystery", "no_such_type")], [edge("START", "mystery"), edge("mystery", "END")]
        ),
        "node mystery: unknown node type 'no_such_type'",
    ),
    "dangling edge": (
        spec_of([node("a")], [edge("START", "a"), edge("a", "lost")]),
        "edge a -> lost: no such node (dangling edge)",
    ),
    "unreachable": (
        spec_of(
            [node("a"), node("island")],
            [edge("START", "a"), edge("a", "END"), edge("island", "END")],
        ),
        "nodes unreachable from START: island",
    ),
    "no exit": (
        spec_of([node("a"), node("b")], [edge("START", "a"), edge("a", "b"), edge("b", "a")]),
        "nodes that can never reach END: a, b",
    ),
    "missing to": (
        spec_of([node("a")], [edge("START", "a"), {"from": "a"}]),
        "edges.1.to: Field required",
    ),
    "top-level list": (["not", "a", "spec"], "expected a mapping at the top level, got list"),
}


@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_cli_refuses_a_bad_spec_file_and_creates_no_run(tmp_path: Path, case: str) -> None:
    data, message = CLI_CASES[case]
    home = tmp_path / "home"
    bad = write_yaml(tmp_path / "bad.yaml", data)

    result = invoke(home, "solve", "1+1?", "--graph", str(bad))

    assert result.exit_code != 0
    assert "error:" in result.stderr
    assert message in one_line(result.stderr)
    assert "Traceback" not in result.output
    assert not (home / "runs.sqlite").exists()


def test_cli_refuses_bad_yaml_syntax(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n", encoding="utf-8")
    result = invoke(home, "solve", "1+1?", "--graph", str(bad))
    assert result.exit_code != 0
    assert "cannot parse bad.yaml" in one_line(result.stderr)
    assert not (home / "runs.sqlite").exists()


def test_cli_refuses_an_unknown_bundled_name(tmp_path: Path) -> None:
    result = invoke(tmp_path, "solve", "1+1?", "--graph", "no_such_topology")
    assert result.exit_code != 0
    text = one_line(result.stderr)
    assert "no bundled topology 'no_such_topology'" in text
    assert "majority_vote" in text  # the known names are listed
    assert not (tmp_path / "runs.sqlite").exists()


def test_cli_refuses_a_missing_spec_file(tmp_path: Path) -> None:
    result = invoke(tmp_path, "solve", "1+1?", "--graph", "absent.yaml")
    assert result.exit_code != 0
    assert "no such spec file: absent.yaml" in one_line(result.stderr)
    assert not (tmp_path / "runs.sqlite").exists()


def test_cli_bad_spec_leaves_an_existing_database_without_new_rows(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    conn = connect(db)
    RunRegistry(conn)  # an existing, empty run database
    conn.close()
    bad = write_yaml(
        tmp_path / "bad.yaml",
        spec_of([node("a", "no_such_type")], [edge("START", "a"), edge("a", "END")]),
    )
    result = invoke(tmp_path, "solve", "1+1?", "--graph", str(bad))
    assert result.exit_code != 0
    assert "unknown node type 'no_such_type'" in one_line(result.stderr)
    conn = connect(db)
    try:
        assert RunRegistry(conn).all() == []
    finally:
        conn.close()
