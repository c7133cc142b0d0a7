"""The ``tmas`` command line: solve a problem; list, show, resume, fork and trace saved runs;
evaluate, compare and draw topologies; export runs for training and train; choose plans with
a plan reward model. Each command lives
in its own module."""

from __future__ import annotations

import typer

from tmas.cli.compare import compare
from tmas.cli.evaluate import evaluate
from tmas.cli.export import export_app
from tmas.cli.fork import fork
from tmas.cli.graph import graph
from tmas.cli.graphs import graphs
from tmas.cli.orchrm import orchrm_app
from tmas.cli.resume import resume
from tmas.cli.runs import runs
from tmas.cli.show import show
from tmas.cli.solve import solve
from tmas.cli.trace import trace
from tmas.cli.train import train_app

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

for _name, _command in (
    ("solve", solve),
    ("resume", resume),
    ("runs", runs),
    ("show", show),
    ("graphs", graphs),
    ("eval", evaluate),
    ("graph", graph),
    ("fork", fork),
    ("trace", trace),
    ("compare", compare),
):
    app.command(_name)(_command)
app.add_typer(export_app, name="export")
app.add_typer(train_app, name="train")
app.add_typer(orchrm_app, name="orchrm")

if __name__ == "__main__":
    app()
