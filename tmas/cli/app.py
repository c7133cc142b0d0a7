"""The ``tmas`` command line: solve a problem; list, show, resume, fork and trace saved runs;
evaluate, compare and draw topologies; export runs for training and train; choose plans with
a plan reward model; serve topologies as models over HTTP. Each command lives in its own
module, imported only when it runs."""

from __future__ import annotations

import typer

from tmas.cli.lazy import LazyCommand, LazyCommands


class TmasCommands(LazyCommands):
    """The commands of ``tmas``, in the order ``tmas --help`` lists them."""

    ENTRIES = (
        LazyCommand(
            "solve", "tmas.cli.solve", "solve",
            "Run a reasoning topology (TMAS by default) on one problem and print the answer.",
        ),
        LazyCommand(
            "resume", "tmas.cli.resume", "resume",
            "Continue an interrupted or paused run from its last checkpoint, repeating no "
            "finished call",
        ),
        LazyCommand(
            "runs", "tmas.cli.runs", "runs",
            "List saved runs: id, status, iterations done, answer, problem.",
            engine=False,
        ),
        LazyCommand(
            "show", "tmas.cli.show", "show",
            "Print a run's plan, why it stopped, its iterations and its final answer.",
            engine=False,
        ),
        LazyCommand(
            "graphs", "tmas.cli.graphs", "graphs",
            "List the bundled topologies (run one with: tmas solve --graph NAME).",
            engine=False,
        ),
        LazyCommand(
            "eval", "tmas.cli.evaluate", "evaluate",
            "Evaluate a topology on a data set; rerun the same command to finish an "
            "interrupted one.",
        ),
        LazyCommand(
            "graph", "tmas.cli.graph", "graph",
            "Draw a topology (bundled name or spec file): fan-outs, loops and their exits shown.",
            engine=False,
        ),
        LazyCommand(
            "fork", "tmas.cli.fork", "fork",
            "Start a new run from RUN_ID's state after --iteration K, with --set changes.",
        ),
        LazyCommand(
            "trace", "tmas.cli.trace", "trace",
            "Write a run's iterations, candidates, checks, banks and votes as an HTML page.",
        ),
        LazyCommand(
            "compare", "tmas.cli.compare", "compare",
            "Compare evaluations side by side; write accuracy plots (PNG, drawn offline).",
        ),
        LazyCommand(
            "study", "tmas.cli.study", "study",
            "Run a study: conditions interleaved on one engine, a self-consistency control at "
            "equal tokens, paired 95% intervals, a Pareto plot; rerun the same command to "
            "finish it.",
        ),
        LazyCommand("export", "tmas.cli.export", "export_app", "Export saved runs for training."),
        LazyCommand(
            "train", "tmas.cli.train", "train_app",
            "Train agents: the solver on saved runs, a latent final agent.",
        ),
        LazyCommand(
            "orchrm", "tmas.cli.orchrm", "orchrm_app",
            "Plan reward modelling: choose the plan before running it.",
        ),
        LazyCommand(
            "memory", "tmas.cli.memory", "memory_app",
            "Lifelong memories across problems: list, show, prune, export, import.",
            engine=False,
        ),
        LazyCommand(
            "serve", "tmas.cli.serve", "serve",
            "Serve topologies as models through an OpenAI-compatible chat completions API.",
        ),
    )  # fmt: skip


app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__, cls=TmasCommands)


@app.callback()
def _tmas() -> None:
    """The ``tmas`` group itself does nothing; its commands do the work."""


if __name__ == "__main__":
    app()
