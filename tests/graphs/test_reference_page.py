"""``docs/reference.md`` is what the code declares: every built-in node type with its role,
parameters, reads, writes and the fields of each template it renders, every task builder with
the fields its tasks carry, and the other built-in pieces, generated from the registry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference.md"


def test_the_reference_page_is_what_the_registry_declares() -> None:
    made = subprocess.run(  # a fresh process: only the package's own registrations
        [sys.executable, "-m", "tmas.graphs.reference"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    assert made.stdout == PAGE.read_text(encoding="utf-8"), (
        "docs/reference.md is stale: python -m tmas.graphs.reference > docs/reference.md"
    )
    for node_type in ("solve", "verify", "text_agent", "delm_worker", "record_iteration"):
        assert f"### `{node_type}`" in made.stdout
    assert "| `mas/<agent>` | its own (built-in: mas/critic, mas/judger" in made.stdout
    assert "| `delm/judge_user` | evidence, note, problem |" in made.stdout
