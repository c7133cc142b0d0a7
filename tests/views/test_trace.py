"""``tmas trace``: a run's reasoning flow as one HTML page, with every model text escaped, read
without changing the run database; and the page as a real browser renders it."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from tmas.cli import app
from tmas.config import TMASConfig
from tmas.graphs.bundled import load_bundled
from tmas.graphs.run_plan import plan_run
from tmas.lifecycle.history import iteration_records, saved_state
from tmas.lifecycle.manager import RunManager
from tmas.llm.backend import BackendSpec
from tmas.llm.router import ModelRouter
from tmas.roles import Role
from tmas.seeding import derive_seed
from tmas.storage import open_storage
from tmas.storage.sqlite import connect
from tmas.testing.fake_chat import ScriptedChatModel
from tmas.testing.scripted import ScriptedReplies
from tmas.views.trace import RunTrace, collect_trace, render_page

PROBLEM = "What is 9 + 9?"
INJECTED = "<script>alert(1)</script>"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@dataclass(frozen=True)
class MarkupReplies(ScriptedReplies):
    """Scripted replies whose solutions and summaries carry a script tag."""

    def reply(
        self, role: Role | None, system: str, user: str, salt: str = "", prompt: str | None = None
    ) -> str:
        text = super().reply(role, system, user, salt, prompt)
        return f"{INJECTED}\n{text}" if role in ("solver", "summary") else text


def invoke(home: Path, *args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"TMAS_HOME": str(home)})


def db_files(home: Path) -> dict[str, bytes]:
    """Every file of the run database (main file, write-ahead log, shared memory) by name."""
    return {p.name: p.read_bytes() for p in sorted(home.iterdir()) if p.name.startswith("runs.")}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A TMAS_HOME with run r1 (exploit and explore candidates, markup in model outputs) and
    run r2, registered as a child of r1 with another epsilon."""
    model = ScriptedChatModel(replies=MarkupReplies(answers=("18", "17")))
    conn = connect(tmp_path / "runs.sqlite")
    manager = RunManager(conn, router_factory=lambda plan: ModelRouter(model))
    config = TMASConfig(n_candidates=3, n_verifications=2, max_iterations=3, epsilon=0.3)
    manager.start(
        "r1",
        problem=PROBLEM,
        gold_answer="18",
        plan=plan_run(load_bundled("tmas"), config, BackendSpec()),
        show_progress=False,
    )
    child = config.model_copy(update={"epsilon": 1.0, "max_iterations": 2})
    manager.registry.create(
        "r2",
        problem=PROBLEM,
        gold_answer="18",
        plan=plan_run(load_bundled("tmas"), child, BackendSpec()).record(),
        parent_run_id="r1",
    )
    manager.registry.set_status("r2", "stopped")
    assert manager.resume("r2", show_progress=False).finished
    conn.close()  # folds the WAL into the main file
    return tmp_path


def candidate_block(page: str, prefix: str, iteration: int, index: int) -> str:
    start = page.index(f'<div class="candidate" id="{prefix}-it{iteration}-c{index}">')
    ends = [page.find(mark, start + 1) for mark in ('<div class="candidate"', "</article>")]
    return page[start : min(e for e in ends if e > 0)]


def iteration_column(page: str, prefix: str, iteration: int) -> str:
    start = page.index(f'<article class="iteration" id="{prefix}-it{iteration}">')
    return page[start : page.index("</article>", start)]


def collect_trace_of(home: Path, run_id: str) -> RunTrace:
    storage = open_storage(home / "runs.sqlite")
    try:
        return collect_trace(storage, run_id)
    finally:
        storage.close()


def test_page_shows_every_iteration_candidate_bank_item_and_the_final_answer(
    home: Path,
) -> None:
    out = home / "trace.html"
    result = invoke(home, "trace", "r1", "--html", str(out))
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")

    storage = open_storage(home / "runs.sqlite")
    records = iteration_records(storage.checkpointer, "r1")
    state = saved_state(storage, "r1")
    storage.close()
    assert [r["iteration"] for r in records] == [1, 2, 3]
    modes = {mode for r in records for mode in r["modes"]}
    assert {"initial", "exploit", "explore"} <= modes

    for record in records:
        k = record["iteration"]
        column = iteration_column(page, "run0", k)
        assert f"<h3>Iteration {k}</h3>" in column
        assert f"voted answer: <b>{record['voted_answer']}</b>" in column
        pairs = zip(record["answers"], record["modes"], strict=True)
        for index, (answer, mode) in enumerate(pairs):
            block = candidate_block(page, "run0", k, index)
            assert f">{mode}</span>" in block
            assert f"answer: <b>{answer}</b>" in block
            assert "<details><summary>full text" in block  # collapsed by default
    assert f"final answer: <b>{state['final_answer']}</b>" in page

    bank = state["experience_bank"] + state["guideline_bank"]
    assert state["experience_bank"] and state["guideline_bank"]
    for item in bank:
        column = iteration_column(page, "run0", item["iteration"])
        added = column[column.index("<h4>Experiences added</h4>") :]
        assert html.escape(item["text"]) in added
        assert f"from candidate #{item['source_index']}</a> <code>{item['id']}</code>" in added

    texts = {e["id"]: e["text"] for e in state["experience_bank"]}
    exploits = [
        (it.iteration, c.candidate)
        for it in collect_trace_of(home, "r1").iterations
        for c in it.candidates
        if c.candidate["mode"] == "exploit"
    ]
    assert exploits
    for k, candidate in exploits:
        block = candidate_block(page, "run0", k, candidate["index"])
        assert candidate["experience_ids"]
        for key in candidate["experience_ids"]:
            assert f"<code>{key}</code> {html.escape(texts[key])}" in block


def test_the_header_draws_the_saved_topology_with_its_pipeline_nested(home: Path) -> None:
    out = home / "trace.html"
    assert invoke(home, "trace", "r1", "--html", str(out)).exit_code == 0
    header = out.read_text(encoding="utf-8").split("</header>")[0]
    diagram = header[header.index('<details class="topology">') :]
    assert "[[candidate: pipeline]]" in diagram
    start = diagram.index("{ pipeline candidate_chain")
    body = diagram[start : diagram.index("}", start)]
    assert "[[solve]]" in body and "[[verify]]" in body  # the chain, under its node
    assert "[update_banks]" not in body and "[update_banks]" in diagram


def test_model_markup_is_escaped_and_never_raw(home: Path) -> None:
    out = home / "trace.html"
    assert invoke(home, "trace", "r1", "--html", str(out)).exit_code == 0
    page = out.read_text(encoding="utf-8")

    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    summary = page[page.index('<div class="summary">') :]
    assert summary[: summary.index("</div>")].count("&lt;script&gt;") == 1
    assert "<script" not in page.lower()


def test_compare_puts_both_runs_side_by_side_with_their_headers(home: Path) -> None:
    out = home / "both.html"
    result = invoke(home, "trace", "r1", "--html", str(out), "--compare", "r2")
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")

    assert "--runs: 2" in page
    first = page[page.index('<section class="run" id="run0">') : page.index('id="run1"')]
    second = page[page.index('<section class="run" id="run1">') :]
    assert "<h2>Run <code>r1</code></h2>" in first and "epsilon=0.3" in first
    assert "<h2>Run <code>r2</code></h2>" in second and "epsilon=1.0" in second
    assert "<dt>parent run</dt><dd><code>r1</code></dd>" in second
    assert "<dt>parent run</dt><dd>–</dd>" in first
    assert "<h3>Iteration 2</h3>" in second and "<h3>Iteration 3</h3>" not in second


@pytest.mark.parametrize(
    "args",
    [["nope"], ["r1", "--compare", "nope"]],
    ids=["unknown run", "unknown compared run"],
)
def test_unknown_run_is_refused(home: Path, args: list[str]) -> None:
    out = home / "trace.html"
    result = invoke(home, "trace", *args, "--html", str(out))
    assert result.exit_code != 0
    assert "error:" in result.stderr and "no run with id 'nope'" in result.stderr
    assert "Traceback" not in result.output
    assert not out.exists()


def test_missing_database_is_refused_and_not_created(tmp_path: Path) -> None:
    result = invoke(tmp_path, "trace", "r1", "--html", str(tmp_path / "t.html"))
    assert result.exit_code != 0 and "no run database" in result.stderr
    assert not (tmp_path / "runs.sqlite").exists()


def test_trace_leaves_the_database_bytes_unchanged(home: Path) -> None:
    before = db_files(home)
    assert list(before) == ["runs.sqlite"]
    for args in (["r1"], ["r1", "--compare", "r2"], ["nope"]):
        invoke(home, "trace", *args, "--html", str(home / "t.html"))
        assert db_files(home) == before


# The page in a real browser, on a real (tiny) run of the embedded SmolLM2 model.

TINY = TMASConfig(
    n_candidates=2,
    n_verifications=1,
    max_iterations=2,
    solver_max_tokens=48,
    verifier_max_tokens=24,
    summary_max_tokens=24,
    experience_max_tokens=32,
    guideline_max_tokens=16,
    max_retries=0,
)
PWN = "<script>document.title='pwned'</script>"


def chromium_binary() -> str:
    """The installed Chromium; without it the browser test fails, naming what to install."""
    found = shutil.which("chromium")
    if found is None:
        pytest.fail(
            "Chromium is not installed: install it (Debian: apt-get install chromium) or run "
            "bash .ci/run, which installs everything the tests need",
            pytrace=False,
        )
    return found


def chromium(binary: str, profile: Path, *args: str) -> str:
    done = subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}"]
        + list(args),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def text_in_dom(value: str) -> str:
    """How the browser serializes a text node (quotes stay as they are)."""
    return html.escape(value, quote=False)


@pytest.mark.slow
def test_real_run_renders_in_headless_chromium(tmp_path: Path) -> None:
    binary = chromium_binary()
    storage = open_storage(tmp_path / "runs.sqlite")
    manager = RunManager(storage)
    outcome = manager.start(
        "real",
        problem="Tom has 3 apples and buys 4 more. How many apples does he have now?",
        gold_answer="7",
        plan=plan_run(
            load_bundled("tmas"),
            TINY,
            BackendSpec(kind="llamacpp", model="smollm2", n_ctx=2048, n_threads=2),
        ),
        show_progress=False,
    )
    assert outcome.finished
    trace = collect_trace(storage, "real")
    storage.close()

    out = tmp_path / "real.html"
    result = invoke(tmp_path, "trace", "real", "--html", str(out))
    assert result.exit_code == 0, result.output
    dom = chromium(binary, tmp_path / "profile", "--dump-dom", out.as_uri())
    assert re.search(r"<title>TMAS trace: real</title>", dom)
    assert len(trace.iterations) == 2
    for it in trace.iterations:
        assert f"<h3>Iteration {it.iteration}</h3>" in dom
        assert len(it.candidates) == 2
        for c in it.candidates:
            assert f'id="run0-it{it.iteration}-c{c.candidate["index"]}"' in dom
            assert text_in_dom(c.candidate["text"]) in dom
    final = outcome.state["final_answer"]
    shown = (
        '<span class="muted">no answer</span>' if final is None else f"<b>{text_in_dom(final)}</b>"
    )
    assert f"final answer: {shown}" in dom
    assert "<svg" in dom and "<polyline" in dom

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "trace-smollm2.png"
    shot.unlink(missing_ok=True)
    chromium(
        binary,
        tmp_path / "profile",
        f"--screenshot={shot}",
        "--window-size=1400,1000",
        out.as_uri(),
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000

    first = trace.iterations[0].candidates[0]
    first.candidate = {**first.candidate, "text": first.candidate["text"] + PWN}
    injected = tmp_path / "injected.html"
    injected.write_text(render_page([trace]), encoding="utf-8")
    dom = chromium(binary, tmp_path / "profile", "--dump-dom", injected.as_uri())
    title = re.search(r"<title>(.*?)</title>", dom)
    assert title is not None and title.group(1) == "TMAS trace: real"
    assert text_in_dom(PWN) in dom
    assert "<script" not in dom


class FailSecondSolverCall(ScriptedChatModel):
    """Fails the solver call of candidate 1 in iteration 1 (found by its seed), once."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs.get("seed") == derive_seed(0, "solve", 1, 1):
            raise ValueError("bad request")  # fails for good, no retry
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.mark.parametrize(("graph", "link"), [("verify_refine", "repairs"), ("pacore", "reads")])
def test_links_to_earlier_candidates_survive_a_failed_call(
    tmp_path: Path, graph: str, link: str
) -> None:
    model = FailSecondSolverCall()
    conn = connect(tmp_path / "runs.sqlite")
    manager = RunManager(conn, router_factory=lambda plan: ModelRouter(model))
    config = TMASConfig(n_candidates=3, n_verifications=1, max_iterations=2, max_retries=0)
    manager.start(
        "r",
        problem=PROBLEM,
        gold_answer="18",
        plan=plan_run(load_bundled(graph), config, BackendSpec()),
        show_progress=False,
    )
    conn.close()
    page = render_page([collect_trace_of(tmp_path, "r")])
    targets = set()
    for index in range(3 if graph == "verify_refine" else 1):
        block = candidate_block(page, "run0", 2, index)
        assert f" {link} " in block
        targets |= set(re.findall(r'href="#run0-it1-c(\d+)"', block))
    assert targets == {"0", "2"}  # never the candidate whose call failed
    assert "no answer" in candidate_block(page, "run0", 1, 1)
