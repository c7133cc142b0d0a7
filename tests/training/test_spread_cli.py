"""``tmas train filter`` writes the rows a scripted policy solves sometimes but not always and
prints the summary, and refuses bad input in one line without writing anything. One slow test
runs the filter on the real SmolLM2 (hf backend, its de-quantised GGUF)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tmas.training.spread_filter as spread_filter
from tests.training.spread_script import Sampler
from tests.training.spread_script import row as _row
from tests.training.spread_script import scripted as _scripted
from tmas.cli import app, common
from tmas.training.data_files import read_rows, write_rows
from tmas.training.spread_filter import FilterSettings


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture
def scripted_policy(monkeypatch: pytest.MonkeyPatch) -> Callable[..., list[FilterSettings]]:
    """Replace the policy behind ``tmas train filter`` with a scripted one; returns the settings
    each policy was built with."""
    built: list[FilterSettings] = []

    def install(rows: list[dict[str, Any]], correct: list[int], k: int) -> list[FilterSettings]:
        sampler = _scripted(rows, correct, k, [])

        def policy_sampler(settings: FilterSettings) -> Sampler:
            built.append(settings)
            return sampler

        monkeypatch.setattr(spread_filter, "policy_sampler", policy_sampler)
        return built

    return install


def test_filter_writes_the_kept_rows_and_prints_the_summary(
    tmp_path: Path, scripted_policy: Callable[..., list[FilterSettings]]
) -> None:
    rows = [_row(f"q{i}", str(i)) for i in range(4)]
    data, kept = tmp_path / "rows.jsonl", tmp_path / "kept.jsonl"
    write_rows(rows, data)
    built = scripted_policy(rows, [0, 1, 4, 3], 4)
    result = CliRunner().invoke(
        app,
        ["train", "filter", str(data), "--out", str(kept), "-k", "4"]
        + ["--max-completion-length", "32", "--temperature", "0.7", "--seed", "3"],
    )
    assert result.exit_code == 0, result.output
    (settings,) = built
    assert (settings.model, settings.samples, settings.max_completion_length) == ("smollm2", 4, 32)
    assert (settings.temperature, settings.seed) == (0.7, 3)

    written = read_rows(kept)
    assert [r["prompt"][-1]["content"] for r in written] == ["q1", "q3"]
    assert [r["extra_info"]["pass_rate"] for r in written] == [0.25, 0.75]
    assert written[0]["reward_model"] == {"ground_truth": "1", "style": "rule"}
    assert written[0]["data_source"] == "tmas/test" and written[0]["extra_info"]["index"] == 7

    summary = json.loads(result.stdout)  # stdout holds the summary alone
    assert summary == {
        "rows": 4,
        "kept": 2,
        "never_solved": 1,
        "always_solved": 1,
        "pass_rate": 0.5,
        "samples": 4,
        "histogram": {"0": 1, "1": 1, "2": 0, "3": 1, "4": 1},
    }
    assert _lines(result.stderr) == [
        "sampled 4/4 row(s)",
        "0/4 correct: 1 row(s)",
        "1/4 correct: 1 row(s)",
        "2/4 correct: 0 row(s)",
        "3/4 correct: 1 row(s)",
        "4/4 correct: 1 row(s)",
    ]


def test_filter_prints_the_summary_as_one_json_line(
    tmp_path: Path,
    scripted_policy: Callable[..., list[FilterSettings]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The width rich takes when no standard stream is a terminal (a pipe, CI, a subprocess).
    monkeypatch.setattr(common.out, "_width", 80)
    rows = [_row(f"q{i}", str(i)) for i in range(4)]
    data, kept = tmp_path / "rows.jsonl", tmp_path / "kept.jsonl"
    write_rows(rows, data)
    scripted_policy(rows, [0, 1, 4, 3], 4)
    result = CliRunner().invoke(app, ["train", "filter", str(data), "--out", str(kept), "-k", "4"])
    assert result.exit_code == 0, result.output
    assert json.loads(_lines(result.stdout)[-1])["rows"] == 4


def test_filter_without_any_row_with_spread_writes_nothing(
    tmp_path: Path, scripted_policy: Callable[..., list[FilterSettings]]
) -> None:
    rows = [_row("easy", "1"), _row("hard", "2")]
    data, kept = tmp_path / "rows.jsonl", tmp_path / "kept.jsonl"
    write_rows(rows, data)
    scripted_policy(rows, [2, 0], 2)
    result = CliRunner().invoke(
        app, ["train", "filter", str(data), "--out", str(kept), "-k", "2", "--quiet"]
    )
    assert result.exit_code == 2, result.output
    (line,) = _lines(result.output)
    assert "no row has reward spread" in line and "nothing written" in line
    assert '"never_solved": 1' in line and '"always_solved": 1' in line
    assert not kept.exists()
    assert list(tmp_path.iterdir()) == [data]  # no temporary file left either


def test_filter_refuses_an_output_that_is_neither_parquet_nor_jsonl(
    tmp_path: Path, scripted_policy: Callable[..., list[FilterSettings]]
) -> None:
    rows = [_row("q", "1")]
    data = tmp_path / "rows.jsonl"
    write_rows(rows, data)
    built = scripted_policy(rows, [1], 2)
    result = CliRunner().invoke(
        app, ["train", "filter", str(data), "--out", str(tmp_path / "kept.csv"), "-k", "2"]
    )
    assert result.exit_code == 2, result.output
    (line,) = _lines(result.output)
    assert "kept.csv: expected a .parquet or .jsonl file" in line
    assert built == []  # refused before any model is loaded
    assert not (tmp_path / "kept.csv").exists()


def test_filter_refuses_a_missing_data_file(
    tmp_path: Path, scripted_policy: Callable[..., list[FilterSettings]]
) -> None:
    built = scripted_policy([], [], 2)
    missing = tmp_path / "none.jsonl"
    result = CliRunner().invoke(
        app, ["train", "filter", str(missing), "--out", str(tmp_path / "kept.jsonl")]
    )
    assert result.exit_code == 2, result.output
    (line,) = _lines(result.output)
    assert f"{missing}: no such file" in line
    assert built == []
    assert not (tmp_path / "kept.jsonl").exists()


def test_filter_refuses_rows_missing_a_column(
    tmp_path: Path, scripted_policy: Callable[..., list[FilterSettings]]
) -> None:
    row = _row("q", "1")
    del row["_source"]
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(row) + "\n")
    built = scripted_policy([], [], 2)
    result = CliRunner().invoke(
        app, ["train", "filter", str(data), "--out", str(tmp_path / "kept.jsonl"), "--quiet"]
    )
    assert result.exit_code == 2, result.output
    (line,) = _lines(result.output)
    assert "row 1: missing _source" in line
    assert built == []


def test_filter_needs_at_least_two_samples(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    write_rows([_row("q", "1")], data)
    result = CliRunner().invoke(
        app, ["train", "filter", str(data), "--out", str(tmp_path / "kept.jsonl"), "-k", "1"]
    )
    assert result.exit_code == 2
    assert "-k" in result.output or "--samples" in result.output


# The real policy


SUMMARY_IN_ERROR = re.compile(r"no row has reward spread \((\{.*\})\); nothing written")


@pytest.mark.slow
def test_filter_on_real_smollm2(tmp_path: Path) -> None:
    system = "You answer with one number written as \\boxed{n}."
    rows = [
        {
            "prompt": [
                {"role": "system", "content": system},
                {"role": "user", "content": f"Write the number {n} as \\boxed{{{n}}}."},
            ],
            "data_source": "tmas/test",
            "ability": "math",
            "reward_model": {"ground_truth": gold, "style": "rule"},
            "extra_info": {"problem": f"Write {n}"},
            "_source": "normal",
        }
        for n, gold in (("3", "3"), ("7", "123456"))
    ]
    data, kept = tmp_path / "rows.jsonl", tmp_path / "kept.jsonl"
    write_rows(rows, data)
    result = CliRunner().invoke(
        app,
        ["train", "filter", str(data), "--out", str(kept), "-k", "2", "--quiet"]
        + ["--max-completion-length", "12", "--model", "smollm2", "--device", "cpu"],
    )
    if result.exit_code == 0:
        summary = json.loads(result.stdout)
        assert summary["kept"] == 1
        (row,) = read_rows(kept)
        assert row["reward_model"]["ground_truth"] == "3"
        assert row["extra_info"]["pass_rate"] == 0.5
        assert len(_lines(result.stderr)) == 3  # the histogram: 0, 1 and 2 correct of 2
    else:
        assert result.exit_code == 2, result.output
        (line,) = _lines(result.output)
        found = SUMMARY_IN_ERROR.search(line)
        assert found, line
        summary = json.loads(found.group(1))
        assert summary["kept"] == 0
        assert not kept.exists()
    assert summary["rows"] == 2 and summary["samples"] == 2
    assert summary["never_solved"] >= 1  # nothing writes 123456 when asked for 7
    assert sum(summary["histogram"].values()) == 2
    assert summary["histogram"]["0"] >= 1
