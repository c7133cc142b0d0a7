"""Every script under ``benchmarks/`` runs end to end at its toy size (``--toy``) and prints its
results, so none rots when the code under it changes. The scripts are found by listing the
folder: a new one without a toy mode fails here. The two problem generators the scripts import
have no command line; each is called once at a tiny size instead."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import invoke
from tmas.eval.study_loading import load_study
from tmas.testing.fake_openai_server import FakeOpenAIServer
from tmas.testing.scripted import ScriptedReplies

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
SCRIPTS = sorted(path.stem for path in BENCHMARKS.glob("*.py"))
# Libraries, not scripts: the problem generators the learning benchmarks import. Neither has a
# command line (a main) to give --toy to, so each is called once at a tiny size instead.
GENERATORS = ("trap_problems", "word_problems")
NUMBER = r"-?[\d.]+"
# What each script prints when it finishes (regular expressions, each matching one line).
RESULTS: dict[str, tuple[str, ...]] = {
    "client_throughput": (
        rf"^tmas \s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$",
        rf"^httpx \s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$",
    ),
    "concurrency": (
        rf"^TMAS graph, ainvoke\s+{NUMBER} s  ratio {NUMBER}",
        rf"^graph ainvoke / plain asyncio\s+{NUMBER}",
    ),
    "durability": tuple(
        rf"^{mode}\s+{NUMBER}\s+{NUMBER}\s+\d+\s+-?\d+$" for mode in ("sync", "async", "exit")
    ),
    "embedded_backend": (
        rf"^serial\s+{NUMBER} s  calls=5 ",
        rf"^batched\s+{NUMBER} s  calls=5 .*serial/this={NUMBER}$",
        rf"prefill {NUMBER} tok/s  decode {NUMBER} tok/s  prefix hit",
    ),
    "engine_overhead": (
        r"^check: same prompts, same calls per role, same final state on all sides$",
        rf"^  A_async_sqlite/B = {NUMBER}",
    ),
    "engine_settings": (
        rf"^B=2 fa=on unified\s+wall\s+{NUMBER}s  out\s+{NUMBER} tok/s",
        rf"^flash_attn=on kv_unified=True prompt=\d+ tokens: B=1 {NUMBER}  B=2 {NUMBER} tok/s$",
    ),
    "hf_batching": (
        rf"^\s+one at a time: {NUMBER} s, {NUMBER} tokens/s$",
        rf"^speed-up: {NUMBER}x; answers that differ: \d+/4$",
    ),
    "hybrid_rl": (
        r'^\{"rows": \{"initial": \d+, .*"explore": 1\}, "held_out": 2, "rft_rows": 1\}$',
    ),
    "latent_vs_text": tuple(
        rf"^\| {system} \| \d+% \| \d+% \| [+-]\d+ \[[+-]\d+, [+-]\d+\] \|"
        for system in ("single agent", "text_mas", "latent_mas")
    )
    + (r"^latent_mas after - single agent after: [+-]\d+ points",),
    "lifelong": (
        r"^2 traps problems in order, tmas N=1 M=1 T=1, 16-token answers, model smollm2",
        rf"^on - off \(second_half\): [+-]{NUMBER} points, 95% interval",
        r"^lessons shown per problem: \[\d+, \d+\]; items in memory at the end: \d+$",
    ),
    "orchrm": (r'^ "leave_one_problem_out": \{$', r'^  "family x plan": \{$'),
    "pacore_loop": (
        rf"^tmas eval\s+{NUMBER} s$",
        rf"^bare loop\s+{NUMBER} s$",
        rf"^tmas eval / bare loop = {NUMBER}$",
    ),
    "pipelining": (
        rf"^tmas\s+(sync|async)\s+1\.0\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}",
        r"^goal for a pipelined topology",
    ),
    "serve": (
        rf"^\s+2\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}$",
        r"^tmas serve majority_vote \(N=4\)\s+[\d.]+ s\s+4 calls",
        r"^OptiLLM majority_voting and self_consistency: not measured",
    ),
    "soak": (r"^problems lost: \d+ \(goal 0\)$", r"^retry overhead: [\d.]+ requests per"),
    "startup": (
        rf"^first request to last answer {NUMBER} s\s+ideal {NUMBER} s, ratio {NUMBER}$",
        rf"^last answer to exit\s+{NUMBER} s$",
    ),
    "state_growth": (
        rf"^iteration 3 / iteration 2: checkpoint {NUMBER}, prompts {NUMBER}",
        r"^checkpoint size stops growing at iteration \d",
    ),
    # the test install has vLLM's CPU build: in-process vLLM and llama.cpp run at toy size
    "vllm_backends": tuple(
        rf"^{backend}\s+{NUMBER}\s+{NUMBER}\s+5\s+\d+\s+\d+\s+{NUMBER}\s+{NUMBER}%"
        for backend in ("vllm", "llamacpp")
    )
    + (r"^vllm-server: not run at toy size",),
}


def orchrm_study(folder: Path) -> list[str]:
    """``--study`` for ``orchrm.py``: the shipped OrchRM study at its toy size against the
    scripted server, which picks each answer among the problems' right ones, so plans are
    right on some problems and wrong on others and pairs can be labelled."""
    path = BENCHMARKS / "studies" / "orchrm.yaml"
    limit = load_study(path, toy=True).problems.limit
    data = (BENCHMARKS / "studies" / "data" / "orchrm_problems.jsonl").read_text()
    answers = tuple(json.loads(line)["answer"] for line in data.splitlines()[:limit])
    out = folder / "study"
    with FakeOpenAIServer(ScriptedReplies(answers=answers)) as server:
        result = invoke(
            folder, "study", str(path), "--out", str(out), "--toy", "--quiet",
            "--set", "backend.kind=openai", "--set", "backend.model=scripted",
            "--set", f"backend.base_url={server.base_url}",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    return ["--study", str(out)]


def test_every_script_prints_known_results_or_is_a_generator() -> None:
    assert sorted([*RESULTS, *GENERATORS]) == SCRIPTS, (
        "a script under benchmarks/ needs a --toy mode and its result lines in RESULTS"
    )


@pytest.mark.parametrize("name", [name for name in SCRIPTS if name not in GENERATORS])
def test_a_benchmark_runs_at_toy_size(name: str, tmp_path: Path) -> None:
    extra = orchrm_study(tmp_path) if name == "orchrm" else []
    env = {**os.environ, "TMAS_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{name}.py"), "--toy", *extra],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    shown = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"{name}.py --toy exited {done.returncode}:\n{shown}"
    for pattern in RESULTS.get(name, ()):
        assert re.search(pattern, done.stdout, re.M), f"no line like {pattern!r}:\n{done.stdout}"
    assert RESULTS.get(name), f"{name}.py ran; name what it prints when it finishes in RESULTS"


@pytest.mark.parametrize("name", GENERATORS)
def test_a_problem_generator_makes_problems_at_tiny_size(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the generators import each other by name
    module = importlib.import_module(name)
    assert not hasattr(module, "main"), f"{name}.py has a command line now: give it --toy"
    rows = module.generate(2, seed=1)
    assert len(rows) == 2 and rows == module.generate(2, seed=1)
    for row in rows:
        assert {"id", "problem", "answer", "kind", "solution"} <= set(row)
        assert row["solution"].endswith(f"\\boxed{{{row['answer']}}}.")
