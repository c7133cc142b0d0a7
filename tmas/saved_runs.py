"""Saved runs from Python: solve a problem, resume, fork and evaluate, each run kept in a run
database (SQLite file or PostgreSQL URL; ``$TMAS_HOME/runs.sqlite`` by default) exactly as
the command line keeps it, so ``tmas runs``, ``show``, ``trace`` and ``resume`` see them too.

A run started with chat models passed from Python saves a description of them, not the
models: ``tmas resume`` refuses it with a message, and :func:`resume` needs them again.

Example:
    >>> import os, tempfile, tmas
    >>> from tmas.testing.fake_chat import ScriptedChatModel, ScriptedReplies
    >>> db = os.path.join(tempfile.mkdtemp(), "runs.sqlite")
    >>> model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
    >>> outcome = tmas.solve("What is 9 + 9?", topology="majority_vote", llm=model, db=db,
    ...                      config={"n_candidates": 2}, run_id="first")
    >>> outcome.final_answer, outcome.finished
    ('18', True)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from tmas.api import (
    ChatModels,
    Prompts,
    Settings,
    Topology,
    check_problem,
    plan_with_models,
    router_factory,
)
from tmas.eval.data import Problem, load_problems
from tmas.eval.evaluation import Evaluation
from tmas.lifecycle.fork import fork_run
from tmas.lifecycle.manager import (
    EventSink,
    Reviewer,
    RunManager,
    RunOutcome,
)
from tmas.lifecycle.run_database import open_runs
from tmas.llm.backend import BackendSpec, custom_backend
from tmas.llm.router import ModelRouter
from tmas.storage.run_registry import new_run_id
from tmas.storage.sqlite import default_db_path

Models = BaseChatModel | ModelRouter | None


@contextmanager
def _manager(db: str | Path | None, factory: Any, *, for_writing: bool) -> Iterator[RunManager]:
    storage = open_runs(db or default_db_path(), for_writing=for_writing)
    try:
        yield RunManager(storage, router_factory=factory)
    finally:
        storage.close()


def solve(
    problem: str,
    *,
    topology: Topology = "tmas",
    llm: Models = None,
    role_models: ChatModels = None,
    backend: BackendSpec | Mapping[str, Any] | None = None,
    config: Settings = None,
    gold: str | None = None,
    db: str | Path | None = None,
    run_id: str | None = None,
    plugins: Sequence[str] = (),
    prompts: Prompts = None,
    documents: Sequence[str] = (),
    max_concurrency: int | None = None,
    show_progress: bool = False,
    on_event: EventSink | None = None,
    review: Reviewer | None = None,
) -> RunOutcome:
    """Run ``topology`` on ``problem`` as a new saved run and return how it ended.

    Models are ``llm`` (+ ``role_models``), any langchain-core chat models, or ``backend``
    settings (the embedded llama.cpp model by default); ``config`` and the spec's ``config:``
    combine as on the command line; ``gold`` grades Pass@1; ``on_event`` receives the live
    events, ``review`` pauses after each iteration (see :class:`RunManager`).
    """
    text = check_problem(problem)
    plan, router = plan_with_models(topology, config, llm=llm, role_models=role_models,
                                    backend=backend, plugins=plugins, prompts=prompts)  # fmt: skip
    with _manager(db, lambda *_: router, for_writing=True) as manager:
        return manager.start(
            run_id or new_run_id(),
            problem=text,
            gold_answer=gold,
            plan=plan,
            documents=list(documents),
            show_progress=show_progress,
            max_concurrency=max_concurrency,
            on_event=on_event,
            review=review,
        )


def _resume_with(
    manager: RunManager,
    run_id: str,
    llm: Models,
    role_models: ChatModels,
    **options: Any,
) -> RunOutcome:
    """Continue ``run_id``; with chat models given, the run's saved backend says so."""
    if role_models and llm is None:
        raise ValueError("role_models needs llm, the main chat model")
    backend = None
    if llm is not None:
        main = llm.main if isinstance(llm, ModelRouter) else llm
        roles = llm.overrides if isinstance(llm, ModelRouter) else role_models
        backend = custom_backend(main, roles)
    return manager.resume(run_id, backend=backend, **options)


def resume(
    run_id: str,
    *,
    db: str | Path | None = None,
    llm: Models = None,
    role_models: ChatModels = None,
    max_concurrency: int | None = None,
    show_progress: bool = False,
    on_event: EventSink | None = None,
    review: Reviewer | None = None,
) -> RunOutcome:
    """Continue a saved run from its last checkpoint, repeating no finished call.

    A run made with chat models passed from Python needs them again (``llm``, ``role_models``);
    otherwise its saved backend rebuilds its models (CustomModelError when it cannot). Models
    passed here continue any run, and its saved backend then describes them (so ``tmas
    resume`` needs ``--base-url`` and ``--model`` for it afterwards).

    Example:
        >>> import os, tempfile
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> db = os.path.join(tempfile.mkdtemp(), "runs.sqlite")
        >>> _ = solve("1 + 1?", topology="majority_vote", llm=ScriptedChatModel(), db=db,
        ...           run_id="r")
        >>> resume("r", db=db).finished  # finished runs come back as they are
        True
    """
    with _manager(db, router_factory(llm, role_models), for_writing=True) as manager:
        return _resume_with(
            manager,
            run_id,
            llm,
            role_models,
            show_progress=show_progress,
            max_concurrency=max_concurrency,
            on_event=on_event,
            review=review,
        )


def fork(
    run_id: str,
    *,
    iteration: int,
    changes: Mapping[str, Any] | None = None,
    new_id: str | None = None,
    db: str | Path | None = None,
    llm: Models = None,
    role_models: ChatModels = None,
    max_concurrency: int | None = None,
    show_progress: bool = False,
    on_event: EventSink | None = None,
) -> RunOutcome:
    """A new run that starts from ``run_id``'s state after ``iteration`` with the config
    fields in ``changes`` changed, run to its end; the parent is untouched.

    Example:
        >>> import os, tempfile
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> db, model = os.path.join(tempfile.mkdtemp(), "runs.sqlite"), ScriptedChatModel()
        >>> settings = {"n_candidates": 2, "n_verifications": 1, "max_iterations": 2}
        >>> _ = solve("1 + 1?", llm=model, db=db, config=settings, run_id="parent")
        >>> child = fork("parent", iteration=1, changes={"epsilon": 1.0}, llm=model, db=db)
        >>> child.state["history"][1]["modes"]
        ['explore', 'explore']
    """
    with _manager(db, router_factory(llm, role_models), for_writing=True) as manager:
        child = new_id or new_run_id()
        fork_run(manager, run_id, iteration, child, dict(changes or {}))
        return _resume_with(
            manager,
            child,
            llm,
            role_models,
            show_progress=show_progress,
            max_concurrency=max_concurrency,
            on_event=on_event,
        )


def _problems(data: str | Sequence[Problem | Mapping[str, Any]], limit: int | None) -> list:
    if isinstance(data, str):
        return load_problems(data, limit)
    problems = [p if isinstance(p, Problem) else Problem.model_validate(dict(p)) for p in data]
    return problems[:limit] if limit is not None else problems


def evaluate(
    data: str | Sequence[Problem | Mapping[str, Any]],
    *,
    out_dir: str | Path,
    topology: Topology = "tmas",
    llm: Models = None,
    role_models: ChatModels = None,
    backend: BackendSpec | Mapping[str, Any] | None = None,
    config: Settings = None,
    db: str | Path | None = None,
    limit: int | None = None,
    plugins: Sequence[str] = (),
    prompts: Prompts = None,
    concurrency: int = 1,
    max_concurrency: int | None = None,
) -> dict[str, Any]:
    """Evaluate ``topology`` on a data set (a file, ``gsm8k``/``math500``, or problems with
    ``id``, ``problem``, ``answer``): one saved run per problem, results and summary written
    to ``out_dir`` as ``tmas eval`` writes them; the same call again skips finished problems.
    Returns the summary.

    Example:
        >>> import os, tempfile
        >>> from tmas.testing.fake_chat import ScriptedChatModel, ScriptedReplies
        >>> folder = tempfile.mkdtemp()
        >>> model = ScriptedChatModel(replies=ScriptedReplies(answers=("18",)))
        >>> summary = evaluate([{"id": "a", "problem": "9 + 9?", "answer": "18"}],
        ...                    topology="majority_vote", llm=model, out_dir=folder,
        ...                    db=os.path.join(folder, "runs.sqlite"))
        >>> summary["accuracy"]
        1.0
    """
    plan, router = plan_with_models(topology, config, llm=llm, role_models=role_models,
                                    backend=backend, plugins=plugins, prompts=prompts)  # fmt: skip
    evaluation = Evaluation(
        problems=_problems(data, limit),
        plan=plan,
        router=router,
        db=db or default_db_path(),
        out_dir=Path(out_dir),
        concurrency=concurrency,
        max_concurrency=max_concurrency,
    )
    return evaluation.run()


__all__ = ["evaluate", "fork", "resume", "solve"]
