"""One self-contained HTML page of one or more run traces (no scripts, no external resources).

Every text that comes from a model, the problem or the registry is escaped, so markup inside
a model output is shown as text and never runs.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from tmas.lifecycle.memory_runs import BANK_ID_PREFIX
from tmas.nodes.control.selection_rules import describe_selection
from tmas.views.trace.collect import CandidateTrace, IterationTrace, RunTrace
from tmas.views.trace.plot import Series, svg_plot
from tmas.views.trace.style import CSS

KNOWN_MODES = ("initial", "exploit", "explore", "reference", "aggregate", "experience")
HEADLINE_CONFIG = ("epsilon", "n_candidates", "n_verifications", "max_iterations", "seed")


def esc(value: Any) -> str:
    """``value`` as HTML text (quotes escaped too, so it is safe inside attributes).

    Example:
        >>> esc("<script>alert(1)</script>")
        '&lt;script&gt;alert(1)&lt;/script&gt;'
    """
    return escape(str(value), quote=True)


def fmt(value: float | None) -> str:
    """A share or score with two decimals, a dash when unknown.

    Example:
        >>> fmt(0.5), fmt(None)
        ('0.50', '–')
    """
    return "–" if value is None else f"{value:.2f}"


def _answer(answer: str | None) -> str:
    return '<span class="muted">no answer</span>' if answer is None else f"<b>{esc(answer)}</b>"


def _anchor(prefix: str, iteration: int, index: int | None = None) -> str:
    return f"{prefix}-it{iteration}" + ("" if index is None else f"-c{index}")


def _checks(candidate: CandidateTrace) -> str:
    if not candidate.verifications:
        return '<div class="muted">no checks</div>'
    items = []
    for check in candidate.verifications:
        verdict = check["verdict"] if check["verdict"] in ("correct", "incorrect") else "unknown"
        items.append(
            f'<li class="verdict-{verdict}">check {check["check_index"] + 1}: score '
            f"{fmt(check['score'])}, {esc(check['verdict'])}"
            f"<details><summary>verifier text</summary><pre>{esc(check['text'])}</pre>"
            "</details></li>"
        )
    return f'<ul class="checks">{"".join(items)}</ul>'


def _candidate(candidate: CandidateTrace, iteration: int, prefix: str) -> str:
    data = candidate.candidate
    mode = data["mode"]
    mode_class = f"mode-{mode}" if mode in KNOWN_MODES else ""
    head = f'<b>#{data["index"]}</b> <span class="badge {mode_class}">{esc(mode)}</span>'
    parent = data.get("parent_index")
    if parent is not None:
        target = _anchor(prefix, iteration - 1, parent)
        head += f' repairs <a href="#{target}">#{parent} of iteration {iteration - 1}</a>'
    references = data.get("references") or []
    if references:
        links = ", ".join(
            f'<a href="#{_anchor(prefix, iteration - 1, i)}">#{i}</a>' for i in references
        )
        head += f" reads {links} of iteration {iteration - 1}"
    parts = [f'<div class="candidate" id="{_anchor(prefix, iteration, data["index"])}">', head]
    parts.append(f'<div class="answer">answer: {_answer(data.get("answer"))}</div>')
    parts.append(_checks(candidate))
    if candidate.summary is not None:
        parts.append(
            f'<div class="summary">summary (mean score {fmt(candidate.summary["mean_score"])}): '
            f"{esc(candidate.summary['text'])}</div>"
        )
    if candidate.experiences:
        given = "".join(
            f"<li><code>{esc(key)}</code> "
            + ('<span class="memory">from memory</span> ' if key.startswith(BANK_ID_PREFIX) else "")
            + (esc(text) if text is not None else '<span class="muted">(text not found)</span>')
            + "</li>"
            for key, text in candidate.experiences
        )
        parts.append(f'<div>given experiences:</div><ul class="given">{given}</ul>')
    parts.append(
        f"<details><summary>full text ({len(data['text'])} characters)</summary>"
        f"<pre>{esc(data['text'])}</pre></details></div>"
    )
    return "".join(parts)


def _vote(it: IterationTrace) -> str:
    record = it.record
    if record is None:
        return '<div class="vote muted">no vote yet: the iteration did not finish</div>'
    rows = "".join(
        f'<tr class="{"winner" if answer == record["voted_answer"] else ""}">'
        f"<td>{esc(answer)}</td><td>{weight:.2f}</td></tr>"
        for answer, weight in sorted(record["vote"].items(), key=lambda kv: -kv[1])
    )
    return (
        f'<div class="vote">voted answer: {_answer(record["voted_answer"])}'
        f"<table><tr><th>answer</th><th>weight</th></tr>{rows}</table>"
        f'<div class="stats">agreement {fmt(it.agreement)} · mean score '
        f"{fmt(record['mean_score'])} · Pass@1 {fmt(record['pass_at_1'])}</div></div>"
    )


def _added(it: IterationTrace, prefix: str) -> str:
    def source(index: int) -> str:
        return f'<a href="#{_anchor(prefix, it.iteration, index)}">from candidate #{index}</a>'

    items = [
        f'<li><span class="badge">{esc(e["kind"])}</span> {esc(e["text"])} '
        f"{source(e['source_index'])} <code>{esc(e['id'])}</code></li>"
        for e in it.experiences_added
    ]
    guides = [
        f"<li>{esc(g['text'])} {source(g['source_index'])} <code>{esc(g['id'])}</code></li>"
        for g in it.guidelines_added
    ]
    none = '<div class="muted">none</div>'
    return (
        "<h4>Experiences added</h4>"
        + (f'<ul class="added">{"".join(items)}</ul>' if items else none)
        + "<h4>Guidelines added</h4>"
        + (f'<ul class="added">{"".join(guides)}</ul>' if guides else none)
    )


def _iteration(it: IterationTrace, trace: RunTrace, prefix: str) -> str:
    parts = [f'<article class="iteration" id="{_anchor(prefix, it.iteration)}">']
    parts.append(f"<h3>Iteration {it.iteration}</h3>{_vote(it)}")
    if not it.saved:
        where = f" (run <code>{esc(trace.parent_run_id)}</code>)" if trace.parent_run_id else ""
        parts.append(f'<p class="muted">candidates saved in the parent run{where}</p>')
    else:
        parts.append(f"<h4>Candidates ({len(it.candidates)})</h4>")
        parts.extend(_candidate(c, it.iteration, prefix) for c in it.candidates)
        parts.append(_added(it, prefix))
    parts.append("</article>")
    return "".join(parts)


def plot_series(trace: RunTrace) -> list[Series]:
    """The plotted lines of a run: answer agreement, mean verification score and Pass@1.

    Example:
        >>> [s.label for s in plot_series(RunTrace("r1"))]
        ['agreement', 'mean score', 'Pass@1']
    """
    records = [it.record for it in trace.iterations]
    return [
        Series("agreement", [it.agreement for it in trace.iterations], "#1f77b4"),
        Series("mean score", [r and r["mean_score"] for r in records], "#ff7f0e", "6 3"),
        Series("Pass@1", [r and r["pass_at_1"] for r in records], "#2ca02c", "2 3"),
    ]


def _header(trace: RunTrace) -> str:
    config = trace.config
    headline = ", ".join(f"{k}={esc(config[k])}" for k in HEADLINE_CONFIG if k in config)
    status = esc(trace.status) + (f" ({esc(trace.stop_reason)})" if trace.stop_reason else "")
    rows = [
        ("problem", f'<pre class="problem">{esc(trace.problem)}</pre>'),
        ("gold answer", esc(trace.gold_answer) if trace.gold_answer is not None else "–"),
        ("topology", esc(trace.graph)),
        ("status", status),
        ("parent run", f"<code>{esc(trace.parent_run_id)}</code>" if trace.parent_run_id else "–"),
        ("config", headline or "–"),
    ]
    table = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in config.items())
    return (
        f'<header><h2>Run <code>{esc(trace.run_id)}</code></h2><dl class="meta">'
        + "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in rows)
        + f"</dl><details><summary>full config</summary><table>{table}</table></details>"
        + _roles(trace)
        + _channels(trace)
        + _diagram(trace)
        + plan_choice_table(trace.plan_choice)
        + _memory(trace)
        + "</header>"
    )


def _memory(trace: RunTrace) -> str:
    """The lessons the run started with from a lifelong memory: each one's kind (strategy,
    pitfall, ...), its source and where the prompts show it."""
    if not trace.memory_items:
        return ""
    items = "".join(
        f'<li><span class="memory">from memory</span> <span class="badge">'
        f"{esc(item.get('kind') or 'note')}</span> <code>{esc(item['id'])}</code> "
        f"{esc(item['text'])}</li>"
        for item in trace.memory_items
    )
    name = esc(trace.config.get("memory") or "")
    return (
        f'<div class="memory-items">started with {len(trace.memory_items)} lessons of memory '
        f"<code>{name}</code>, shown in the prompts that read experiences (first-iteration, "
        f"exploit; never the explore prompt's list of strategies to avoid):<ul>{items}</ul></div>"
    )


def _roles(trace: RunTrace) -> str:
    """Each role's binding: the model its calls used, its budget and temperature.

    Example:
        >>> _roles(RunTrace("r", roles={"verifier": {"kind": "openai", "model": "judge",
        ...     "base_url": None, "adapter": None, "temperature": 0.0, "max_tokens": 64,
        ...     "model_of": None}})).count("<tr>")
        2
    """
    if not trace.roles:
        return ""
    rows = "".join(
        f"<tr><td>{esc(role)}</td><td>{esc(b['kind'])}:{esc(b['model'])}"
        + (f" @ {esc(b['base_url'])}" if b.get("base_url") else "")
        + (f" + {esc(b['adapter'])}" if b.get("adapter") else "")
        + f"</td><td>{esc(b['max_tokens'])}</td><td>{esc(b['temperature'])}</td>"
        f"<td>{esc(b.get('model_of') or '–')}</td></tr>"
        for role, b in trace.roles.items()
    )
    head = "<tr><th>role</th><th>model</th><th>max tokens</th><th>temperature</th>"
    return (
        '<details class="roles"><summary>roles (what each role\'s calls were made with)'
        f"</summary><table>{head}<th>model of</th></tr>{rows}</table></details>"
    )


def _channels(trace: RunTrace) -> str:
    """The run's state channels (a plugin's or the spec's) and their values at its end.

    Example:
        >>> "<code>marks</code>" in _channels(RunTrace("r", channels={"marks": {"a": 1}}))
        True
    """
    if not trace.channels:
        return ""
    rows = "".join(
        f"<tr><td><code>{esc(name)}</code></td><td><pre>"
        f"{esc(json.dumps(value, ensure_ascii=False, indent=1, default=str))}</pre></td></tr>"
        for name, value in trace.channels.items()
    )
    return (
        f'<details class="channels" open><summary>channels</summary><table>{rows}</table></details>'
    )


def _diagram(trace: RunTrace) -> str:
    if not trace.diagram:
        return ""
    return (
        '<details class="topology"><summary>topology (pipelines nested under their node)'
        f"</summary><pre>{esc(trace.diagram)}</pre></details>"
    )


def plan_choice_table(choice: dict[str, Any] | None) -> str:
    """The candidate plans a reward model scored before the run (``--graph auto``), best
    first, the chosen one marked, each plan's text behind a disclosure; empty without.

    Example:
        >>> html = plan_choice_table({"chosen": "a", "reward_model": "/rm", "candidates": [
        ...     {"name": "a", "score": 1.25, "text": "topology: a", "rejected": None},
        ...     {"name": "<b>", "score": None, "text": "?", "rejected": "not YAML"}]})
        >>> "chosen" in html and "+1.2500" in html and "&lt;b&gt;" in html
        True
    """
    if not choice:
        return ""
    ranked = sorted(choice["candidates"], key=lambda c: -(c["score"] if c["score"] is not None
                                                         else float("-inf")))  # fmt: skip
    rows = []
    for candidate in ranked:
        chosen = "chosen" if candidate["name"] == choice["chosen"] else ""
        score = (
            f"{candidate['score']:+.4f}"
            if candidate["score"] is not None
            else f"rejected: {candidate['rejected']}"
        )
        rows.append(
            f"<tr><td>{esc(chosen)}</td><td>{esc(candidate['name'])}</td><td>{esc(score)}</td>"
            f"<td><details><summary>plan</summary><pre>{esc(candidate['text'])}</pre>"
            "</details></td></tr>"
        )
    return (
        f'<details class="plans" open><summary>plans scored before the run (reward model '
        f"<code>{esc(choice.get('reward_model'))}</code>)</summary><table>"
        + "".join(rows)
        + "</table></details>"
    )


def _selection(trace: RunTrace) -> str:
    return f"selection {trace.selection}: {describe_selection(trace.selection)}"


def render_run(trace: RunTrace, prefix: str = "run0") -> str:
    """One run's section: header, final answer, plot and one column per iteration
    (``prefix`` keeps its element ids apart from another run's on the same page).

    Example:
        >>> section = render_run(RunTrace("r1", problem="<b>2+2</b>", final_answer="4"))
        >>> "&lt;b&gt;2+2&lt;/b&gt;" in section and "<b>4</b>" in section
        True
    """
    iterations = [it.iteration for it in trace.iterations]
    plot = svg_plot(iterations, plot_series(trace), f"run {trace.run_id} by iteration")
    columns = "".join(_iteration(it, trace, prefix) for it in trace.iterations)
    return (
        f'<section class="run" id="{prefix}">{_header(trace)}'
        f'<div class="final">final answer: {_answer(trace.final_answer)} '
        f'<span class="muted">({esc(_selection(trace))})</span></div>{plot}'
        f'<div class="iterations">{columns or "<p class=muted>no iteration saved</p>"}</div>'
        "</section>"
    )


def render_page(traces: list[RunTrace]) -> str:
    """A whole HTML page with the runs side by side.

    Example:
        >>> page = render_page([RunTrace("a"), RunTrace("b")])
        >>> page.startswith("<!DOCTYPE html>") and "--runs: 2" in page and "<script" not in page
        True
    """
    title = "TMAS trace: " + " vs ".join(t.run_id for t in traces)
    sections = "".join(render_run(t, f"run{i}") for i, t in enumerate(traces))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{esc(title)}</h1>"
        f'<div class="runs" style="--runs: {len(traces)}">{sections}</div></body></html>\n'
    )
