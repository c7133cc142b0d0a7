"""The inline style sheet of a trace page (no external resources)."""

from __future__ import annotations

CSS = """
* { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 16px;
  color: #222; background: #f6f7f9; }
h1 { font-size: 20px; margin: 0 0 12px; }
h2 { font-size: 17px; margin: 0 0 6px; }
h3 { font-size: 15px; margin: 0 0 6px; }
h4 { font-size: 13px; margin: 10px 0 4px; color: #555; text-transform: uppercase; }
code { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
pre { white-space: pre-wrap; word-wrap: break-word; font: 12px/1.35 ui-monospace, Menlo,
  Consolas, monospace; background: #f3f3f3; padding: 6px; margin: 4px 0; max-height: 420px;
  overflow: auto; }
.runs { display: grid; gap: 16px; grid-template-columns: repeat(var(--runs, 1), minmax(0, 1fr)); }
.run { background: #fff; border: 1px solid #d8dbe0; border-radius: 6px; padding: 12px;
  min-width: 0; }
.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 10px; margin: 6px 0; }
.meta dt { color: #666; }
.meta dd { margin: 0; min-width: 0; }
.problem { max-height: 160px; }
.final { font-size: 16px; margin: 8px 0; padding: 6px 10px; background: #eef6ee;
  border-left: 4px solid #3a8a3a; }
.plot { display: block; margin: 6px 0 10px; max-width: 100%; height: auto; }
.iterations { display: grid; grid-auto-flow: column; grid-auto-columns: minmax(300px, 1fr);
  gap: 10px; overflow-x: auto; padding-bottom: 6px; }
.iteration { background: #fafbfc; border: 1px solid #e1e4e8; border-radius: 6px; padding: 8px;
  min-width: 0; }
.vote table { border-collapse: collapse; margin: 4px 0; }
.vote td, .vote th { border-bottom: 1px solid #e5e5e5; padding: 1px 8px 1px 0; text-align: left; }
.vote .winner { font-weight: bold; }
.stats { color: #444; font-size: 13px; }
.candidate { background: #fff; border: 1px solid #e1e4e8; border-radius: 5px; padding: 6px;
  margin: 6px 0; }
.candidate:target { outline: 2px solid #f0a500; }
.badge { display: inline-block; border-radius: 3px; padding: 0 5px; font-size: 12px;
  background: #e8e8e8; }
.mode-initial { background: #e3ecf9; }
.mode-exploit { background: #fde7c8; }
.mode-explore { background: #dff3e0; }
.answer b { font-size: 15px; }
.checks { list-style: none; padding: 0; margin: 4px 0; }
.checks li { margin: 2px 0; }
.verdict-correct { color: #1f7a1f; }
.verdict-incorrect { color: #b22222; }
.verdict-unknown { color: #777; }
.summary { font-size: 13px; color: #333; border-left: 3px solid #ccd; padding-left: 6px;
  margin: 4px 0; }
.given, .added { font-size: 13px; margin: 4px 0; padding-left: 18px; }
.muted { color: #777; }
.memory { background: #e8f0fe; color: #1a4fa0; border-radius: 3px; padding: 0 4px; }
details > summary { cursor: pointer; color: #245; }
"""
