"""Reading a chat completion request: the topology (``model``), the problem (the last user
message), how many runs (``n``), whether to stream, and the topology settings the request
sets at its top level (the OpenAI SDK's ``extra_body``), validated like ``tmas solve --set``.
Anything wrong is an :class:`~tmas.serve.api_errors.APIError` naming the parameter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tmas.api import check_problem
from tmas.config import ConfigError, TMASConfig
from tmas.graphs.estimate import estimate_run_calls
from tmas.graphs.run_plan import RunPlan, plan_run, spec_roles
from tmas.graphs.spec import GraphSpec
from tmas.llm.backend import BackendSpec
from tmas.serve.api_errors import APIError, bad_request

# OpenAI parameters a topology has no use for: accepted and left alone.
IGNORED = frozenset(
    {
        "user", "metadata", "store", "top_p", "presence_penalty", "frequency_penalty",
        "logit_bias", "stop", "parallel_tool_calls", "service_tier", "reasoning_effort",
        "stream_options", "prompt_cache_key", "safety_identifier", "verbosity",
    }
)  # fmt: skip
# OpenAI parameters whose meaning a topology's answer cannot honour: refused when set.
UNSUPPORTED = ("tools", "tool_choice", "functions", "function_call", "audio", "prediction")
# What OpenAI's own parameters set in a run's config.
OPENAI_SETTINGS = {
    "temperature": "temperature",
    "seed": "seed",
    "max_tokens": "solver_max_tokens",
    "max_completion_tokens": "solver_max_tokens",
}
# Settings only the server's operator chooses (a request must not point roles at other hosts).
OPERATOR_ONLY = frozenset({"roles"})


@dataclass(frozen=True)
class ServeLimits:
    """What one request may ask of the server.

    Example:
        >>> ServeLimits().max_n
        8
    """

    max_concurrent_runs: int = 8
    max_request_bytes: int = 1_000_000
    max_calls_per_request: int = 2_000
    max_n: int = 8


@dataclass(frozen=True)
class ChatRequest:
    """A checked request: run ``plan`` on ``problem``, ``n`` times."""

    model: str
    plan: RunPlan
    problem: str
    n: int
    stream: bool
    calls_per_run: int

    @property
    def config(self) -> TMASConfig:
        """The settings of the first run."""
        return self.plan.config

    def run_plans(self) -> list[RunPlan]:
        """One plan per run: the ``n`` runs are independent, each with its own seed.

        Example:
            >>> from tmas.graphs.bundled import load_bundled
            >>> from tmas.graphs.run_plan import plan_run
            >>> plan = plan_run(load_bundled("tmas"), {"seed": 5}, BackendSpec(model="smollm2"))
            >>> request = ChatRequest("tmas", plan, "1+1?", 2, False, 72)
            >>> [p.config.seed for p in request.run_plans()]
            [5, 6]
        """
        seed = self.plan.config.seed
        return [self.plan.revised({"seed": seed + k}) for k in range(self.n)]


def message_text(message: Any, index: int) -> str:
    """The text of one chat message: a string, or a list of text parts (other parts refused).

    Example:
        >>> message_text({"role": "user", "content": [{"type": "text", "text": "1+1?"}]}, 0)
        '1+1?'
    """
    param = f"messages[{index}].content"
    if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
        raise bad_request(f"messages[{index}] must be an object with a role", f"messages[{index}]")
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, Mapping) or part.get("type") != "text":
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise bad_request(f"only text content is supported, not {kind!r}", param)
            if not isinstance(part.get("text"), str):
                raise bad_request("a text part needs a text string", param)
            texts.append(part["text"])
        return "\n".join(texts)
    if content is None:
        return ""
    raise bad_request("content must be a string or a list of text parts", param)


def problem_of(messages: Any) -> str:
    """The problem: the conversation's last user message (system and earlier turns are left
    to the topology's own prompts).

    Example:
        >>> problem_of([{"role": "system", "content": "Be brief."},
        ...             {"role": "user", "content": " What is 9 + 9? "}])
        'What is 9 + 9?'
    """
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages must be a non-empty list", "messages")
    texts = [message_text(m, i) for i, m in enumerate(messages)]
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if not users:
        raise bad_request("messages has no user message: the problem is the last one", "messages")
    try:
        return check_problem(texts[users[-1]])
    except ConfigError as exc:
        raise bad_request(str(exc), f"messages[{users[-1]}].content") from None


def settings_of(body: Mapping[str, Any]) -> dict[str, Any]:
    """The topology settings a request sets: config fields at its top level, and OpenAI's
    ``temperature``, ``seed`` and ``max_tokens`` (the solver's answer length).

    Example:
        >>> settings_of({"model": "tmas", "messages": [], "n_candidates": 2, "seed": 3})
        {'n_candidates': 2, 'seed': 3}
    """
    settings: dict[str, Any] = {}
    for key, value in body.items():
        if key in ("model", "messages", "n", "stream") or key in IGNORED:
            continue
        if key in UNSUPPORTED:
            if value not in (None, [], {}):
                raise bad_request(f"{key} is not supported by a reasoning topology", key)
            continue
        if key in OPENAI_SETTINGS:
            if value is not None:
                settings[OPENAI_SETTINGS[key]] = value
        elif key in OPERATOR_ONLY:
            raise bad_request(f"{key} is set when the server starts, not per request", key)
        elif TMASConfig.accepts(key):
            settings[key] = value
        else:
            raise bad_request(f"unrecognized request argument supplied: {key}", key)
    return settings


def _flag(body: Mapping[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool) and value is not None:
        raise bad_request(f"{key} must be true or false", key)
    return bool(value)


def request_plan(
    spec: GraphSpec,
    settings: Mapping[str, Any] | None = None,
    fixed: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
    backend: BackendSpec | None = None,
    plugins: Sequence[str] = (),
) -> RunPlan:
    """The plan of a served run of ``spec``: three layers of settings in rising priority,
    ``defaults`` (the server's memory), ``settings`` (what the request sets) and ``fixed`` (the
    server's per-role models, for the roles ``spec`` knows), on the server's ``backend`` and
    ``plugins`` (:func:`tmas.graphs.run_plan.plan_run`). ConfigError for a bad setting.

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> plan = request_plan(load_bundled("majority_vote"), {"temperature": 0.1},
        ...                     {"roles": {"verifier": {"model": "judge"}}},
        ...                     backend=BackendSpec(kind="openai", model="m", base_url="http://h/v1"))
        >>> plan.bindings["verifier"].model, plan.bindings["solver"].temperature
        ('judge', 0.1)
    """
    fixed = dict(fixed or {})
    if "roles" in fixed:  # the server's per-role models, for the roles this topology knows
        fixed["roles"] = {r: m for r, m in fixed["roles"].items() if r in spec_roles(spec)}
    layers = [defaults, settings, fixed]
    return plan_run(spec, layers, backend or BackendSpec().resolved(), plugins)


def read_request(
    body: Any,
    topologies: Mapping[str, GraphSpec],
    limits: ServeLimits,
    fixed: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
    backend: BackendSpec | None = None,
    plugins: Sequence[str] = (),
) -> ChatRequest:
    """A checked :class:`ChatRequest` from a request body, or the APIError it deserves: its
    run's plan on the server's ``backend`` and ``plugins``
    (:func:`tmas.graphs.run_plan.plan_run`, with three layers of settings in rising priority:
    ``defaults`` (the server's memory), what the request sets, ``fixed`` (the server's
    per-role models, which hold whatever the request says).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> request = read_request(
        ...     {"model": "majority_vote", "n_candidates": 3,
        ...      "messages": [{"role": "user", "content": "What is 9 + 9?"}]},
        ...     {"majority_vote": load_bundled("majority_vote")}, ServeLimits(),
        ...     backend=BackendSpec(model="smollm2"))
        >>> request.config.n_candidates, request.calls_per_run, request.n
        (3, 3, 1)
    """
    if not isinstance(body, Mapping):
        raise bad_request("the request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise bad_request("model is required: a topology name (GET /v1/models lists them)", "model")
    if model not in topologies:
        raise APIError(
            404,
            f"the model {model!r} does not exist; this server offers: "
            f"{', '.join(sorted(topologies))}",
            code="model_not_found",
            param="model",
        )
    spec = topologies[model]
    problem = problem_of(body.get("messages"))
    n = body.get("n", 1)
    if n is None:
        n = 1
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= limits.max_n:
        raise bad_request(f"n must be an integer from 1 to {limits.max_n}", "n")
    try:
        plan = request_plan(spec, settings_of(body), fixed, defaults, backend, plugins)
    except (ConfigError, ValueError) as exc:
        raise bad_request(f"invalid setting: {' '.join(str(exc).split())}") from None
    calls = estimate_run_calls(plan.topology, plan.config).total
    if calls * n > limits.max_calls_per_request:
        raise bad_request(
            f"the request would make up to {calls * n} model calls ({n} run(s) of {calls}); "
            f"this server allows {limits.max_calls_per_request} per request"
        )
    return ChatRequest(model, plan, problem, n, _flag(body, "stream"), calls)
