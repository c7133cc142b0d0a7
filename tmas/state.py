"""The typed shared state of a TMAS run.

Every value is plain JSON-able data (TypedDicts of str/int/float/list/dict), so checkpoints
round-trip under a strict msgpack serializer. Per-iteration lists are merged by reducers
from parallel branches and cleared with the ``RESET`` marker at the start of an iteration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired, TypedDict, get_type_hints

Mode = str
"""A candidate's mode: initial, exploit, explore, reference, aggregate, experience, or one a
plugin's planner declares (see :mod:`tmas.nodes.control.planners`)."""

RESET: dict[str, Any] = {"__reset__": True}
"""Write ``[RESET]`` to a per-iteration list to empty it (the marker survives JSON)."""


class ParseIssue(TypedDict):
    """A model output that a parser could not read as asked."""

    iteration: int
    role: str
    index: int
    problem: str
    excerpt: str


class Plan(TypedDict):
    """How one candidate of an iteration is produced (chosen before any solver runs).

    ``parent_index`` and ``references`` name rollouts of the previous iteration by their
    candidate ``index`` (stable: a failed call elsewhere does not shift them)."""

    iteration: int
    index: int
    mode: Mode
    parent_index: int | None
    seed: int
    references: list[int]


class Candidate(TypedDict):
    """One solution rollout; a failed solver call leaves one with empty text, no answer and
    its ``error`` (it is not verified, summarized, reflected on or voted). ``index`` is its
    stable id within the iteration; ``parent_index`` and ``references`` name the previous
    iteration's rollouts it read."""

    iteration: int
    index: int
    mode: Mode
    parent_index: int | None
    text: str
    answer: str | None
    input_tokens: int
    output_tokens: int
    experience_ids: list[str]
    references: NotRequired[list[int]]
    error: NotRequired[str]


class Verification(TypedDict):
    """One independent check of one candidate; a failed call gives verdict "unknown", no score
    and its ``error``."""

    iteration: int
    candidate_index: int
    check_index: int
    text: str
    verdict: Literal["correct", "incorrect", "unknown"]
    score: float | None
    error: NotRequired[str]


class Summary(TypedDict):
    """The condensed verification feedback of one candidate (empty text and an ``error`` when
    the summary call failed; the mean score is still known)."""

    iteration: int
    candidate_index: int
    text: str
    mean_score: float | None
    error: NotRequired[str]


class Experience(TypedDict):
    """A reliable low-level conclusion or local feedback, kept in the experience bank; or a
    lesson from a lifelong memory (``origin: memory``; a ``strategy`` that worked on a similar
    problem among them)."""

    id: str
    text: str
    kind: Literal["conclusion", "pitfall", "note", "strategy"]
    iteration: int
    source_index: int
    hits: int


class Guideline(TypedDict):
    """A high-level strategy already tried, kept in the guideline bank."""

    id: str
    text: str
    iteration: int
    source_index: int
    hits: int


class IterationRecord(TypedDict):
    """What one iteration produced, kept for the whole run (small by construction).

    ``pass_at_1`` is the mean correctness of every candidate, a failed solver call counting as
    wrong; ``pass_at_1_answered`` leaves failed calls out. ``selected_answer`` is the run's
    answer after this iteration under its selection rule. Records saved before a field
    existed lack it.
    """

    iteration: int
    answers: list[str | None]
    modes: list[str]
    scores: list[float | None]
    vote: dict[str, float]
    voted_answer: str | None
    mean_score: float | None
    pass_at_1: float | None
    pass_at_1_answered: NotRequired[float | None]
    failed_candidates: NotRequired[int]
    selected_answer: NotRequired[str | None]
    experiences_added: int
    guidelines_added: int


class Usage(TypedDict):
    """LLM calls and tokens of one role; ``failed_calls`` counts the calls that failed for good
    (after their retries), present once one did."""

    calls: int
    input_tokens: int
    output_tokens: int
    failed_calls: NotRequired[int]


class CallFailure(TypedDict):
    """One model call that failed for good and was left out of the run."""

    iteration: int | None
    role: str
    node: str
    index: int | None
    error: str


def failed(item: Mapping[str, Any]) -> bool:
    """Whether a candidate, verification or summary records a failed model call.

    Example:
        >>> failed({"answer": None, "error": "solver call failed: ..."}), failed({"answer": "3"})
        (True, False)
    """
    return bool(item.get("error"))


def merge_per_iteration(left: list | None, right: list | None) -> list:
    """Append ``right`` to ``left``; a ``RESET`` item first empties the list.

    Example:
        >>> merge_per_iteration([1], [2])
        [1, 2]
        >>> merge_per_iteration([1], [RESET, 3])
        [3]
    """
    merged = list(left or [])
    for item in right or []:
        if item == RESET:
            merged = []
        else:
            merged.append(item)
    return merged


PARSE_ISSUE_CAP = 200


def append_capped(left: list | None, right: list | None) -> list:
    """Append ``right`` to ``left`` and keep only the newest ``PARSE_ISSUE_CAP`` items (parse
    issues, call failures).

    Example:
        >>> len(append_capped(list(range(PARSE_ISSUE_CAP)), [1, 2]))
        200
    """
    return (list(left or []) + list(right or []))[-PARSE_ISSUE_CAP:]


DIAGNOSTIC_KEYS = ("parse_issues", "call_failures")


def windowed_diagnostics(state: Mapping[str, Any], iteration: int, window: int) -> dict[str, Any]:
    """Updates that keep only the diagnostics (parse issues, call failures) of the last
    ``window`` iterations up to ``iteration``, for each list that would shrink; they replace
    the list (LangGraph's ``Overwrite``), so a run whose replies keep breaking the format does
    not grow its checkpoints. Older entries stay in the earlier checkpoints.

    Example:
        >>> state = {"parse_issues": [{"iteration": 1}, {"iteration": 3}], "call_failures": []}
        >>> windowed_diagnostics(state, 3, 2)["parse_issues"].value
        [{'iteration': 3}]
        >>> windowed_diagnostics(state, 3, 5)
        {}
    """
    from langgraph.types import Overwrite  # the engine's, loaded only when a run writes state

    first = iteration - window + 1
    updates: dict[str, Any] = {}
    for key in DIAGNOSTIC_KEYS:
        items = state.get(key) or []
        kept = [i for i in items if i.get("iteration") is None or i["iteration"] >= first]
        if len(kept) < len(items):
            updates[key] = Overwrite(kept)
    return updates


def add_usage(left: dict | None, right: dict | None) -> dict[str, Usage]:
    """Sum per-role usage counters.

    Example:
        >>> add_usage({"solver": {"calls": 1, "input_tokens": 5, "output_tokens": 7}},
        ...           {"solver": {"calls": 1, "input_tokens": 1, "output_tokens": 1}})["solver"]
        {'calls': 2, 'input_tokens': 6, 'output_tokens': 8}
        >>> add_usage({"verifier": {"calls": 2, "input_tokens": 5, "output_tokens": 7}},
        ...           {"verifier": {"failed_calls": 1}})["verifier"]["failed_calls"]
        1
    """
    total: dict[str, Usage] = {k: dict(v) for k, v in (left or {}).items()}  # type: ignore[misc]
    for role, usage in (right or {}).items():
        mine = total.setdefault(role, {"calls": 0, "input_tokens": 0, "output_tokens": 0})
        for key in ("calls", "input_tokens", "output_tokens"):
            mine[key] = mine.get(key, 0) + int(usage.get(key, 0))
        if "failed_calls" in usage:
            mine["failed_calls"] = mine.get("failed_calls", 0) + int(usage["failed_calls"])
    return total


def failed_calls_by_role(usage: Mapping[str, Mapping[str, int]] | None) -> dict[str, int]:
    """Model calls that failed for good, per role (roles without any left out).

    Example:
        >>> failed_calls_by_role({"solver": {"calls": 4}, "verifier": {"calls": 0,
        ...                       "failed_calls": 8}})
        {'verifier': 8}
    """
    return {
        role: int(counts["failed_calls"])
        for role, counts in (usage or {}).items()
        if counts.get("failed_calls")
    }


def lost_roles(usage: Mapping[str, Mapping[str, int]] | None) -> list[str]:
    """Roles that lost every call they made (each one failed for good): a run with any is
    degraded, whatever answer it gave.

    Example:
        >>> lost_roles({"solver": {"calls": 4}, "verifier": {"calls": 0, "failed_calls": 8}})
        ['verifier']
    """
    return sorted(
        role
        for role, counts in (usage or {}).items()
        if counts.get("failed_calls") and not counts.get("calls")
    )


def merge_keyed(current: Mapping[str, Any] | None, update: Any) -> dict[str, Any]:
    """The keyed reducer (``extras``, and a ``keyed`` channel): the keys of the update replace
    those of the state (so parallel nodes writing different keys both keep theirs); ``RESET``
    empties it.

    Example:
        >>> merge_keyed({"a": 1, "b": 2}, {"b": 3}), merge_keyed({"a": 1}, RESET)
        ({'a': 1, 'b': 3}, {})
    """
    if update == RESET:
        return {}
    return {**(current or {}), **dict(update or {})}


class RunState(TypedDict, total=False):
    """The whole state of one run (one LangGraph thread).

    Banks persist across iterations; ``plans``, ``candidates``, ``verifications``,
    ``summaries`` and the bank proposals hold the current iteration only; ``previous`` holds
    the rollouts of iteration t-1 that exploitation repairs. ``history`` keeps the records of
    the last ``history_window`` iterations and ``vote_totals`` the vote over all of them, so
    the state stays the same size however long a run is; every record stays in the
    checkpoints (:func:`tmas.lifecycle.history.iteration_records`). ``call_failures`` keeps the
    newest model calls that failed for good, and ``usage`` counts them per role. ``extras`` is
    the channel every run has (keyed: plain JSON-able values under keys of their writers'
    choosing; :data:`tmas.nodes.channels.BUILTIN_CHANNELS`).
    """

    problem: str
    gold_answer: str | None
    documents: list[str]
    iteration: int
    plans: list[Plan]
    candidates: Annotated[list[Candidate], merge_per_iteration]
    verifications: Annotated[list[Verification], merge_per_iteration]
    summaries: Annotated[list[Summary], merge_per_iteration]
    experience_proposals: Annotated[list[dict], merge_per_iteration]
    guideline_proposals: Annotated[list[dict], merge_per_iteration]
    previous: list[dict]
    experience_bank: list[Experience]
    guideline_bank: list[Guideline]
    bank_growth: dict[str, int]
    history: list[IterationRecord]
    vote_totals: dict[str, float]
    parse_issues: Annotated[list[ParseIssue], append_capped]
    call_failures: Annotated[list[CallFailure], append_capped]
    usage: Annotated[dict[str, Usage], add_usage]
    final_answer: str | None
    selection: str
    stop_reason: str | None
    extras: Annotated[dict[str, Any], merge_keyed]


CHAIN_OUTPUT_KEYS: tuple[str, ...] = (
    "candidates",
    "verifications",
    "summaries",
    "experience_proposals",
    "guideline_proposals",
    "usage",
    "parse_issues",
    "call_failures",
    "extras",
)
"""What one candidate's chain (a pipeline node's body) hands back to the run: only keys with a
reducer, so the run merges each chain's output once, whatever else the chain's state held."""

CHAIN_INPUT_KEYS: tuple[str, ...] = (
    "problem",
    "gold_answer",
    "documents",
    "iteration",
    "previous",
    "experience_bank",
    "guideline_bank",
)
"""What a chain is given of the run's state (besides the plans it makes candidates for)."""


def _chain_output() -> type:
    hints = get_type_hints(RunState, include_extras=True)
    fields = {key: hints[key] for key in CHAIN_OUTPUT_KEYS}
    return TypedDict("ChainOutput", fields, total=False)  # type: ignore[operator]


ChainOutput = _chain_output()
"""The output schema of a chain: the :data:`CHAIN_OUTPUT_KEYS` of :class:`RunState`, with
their reducers.

Example:
    >>> sorted(ChainOutput.__annotations__) == sorted(CHAIN_OUTPUT_KEYS)
    True
"""
