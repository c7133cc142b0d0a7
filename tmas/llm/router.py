"""One place that calls chat models for the agents: picks the role's model, sets limits, counts."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import functools
import threading
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.errors import GraphBubbleUp

from tmas.config import TMASConfig
from tmas.llm.bindings import RoleBinding, resolve_bindings
from tmas.llm.calls import Completion, ModelCall, call_metadata, describe_model
from tmas.llm.endpoint import EndpointChatModel
from tmas.llm.errors import ModelCallError
from tmas.llm.loop_clients import LoopClients, answers_async
from tmas.llm.openai_wire import ChatReply, role_headers
from tmas.roles import Role, RoleBook, UnknownRoleError


def _text_of(message: Any) -> str:
    content = getattr(message, "content", message)
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content or "")


def _usage_of(message: Any) -> tuple[int, int]:
    usage = getattr(message, "usage_metadata", None) or {}
    return int(usage.get("input_tokens", 0) or 0), int(usage.get("output_tokens", 0) or 0)


def default_bindings(main: BaseChatModel) -> dict[Role, RoleBinding]:
    """The bindings of a router made without a run's plan: the package's own roles at their
    default budgets and the default temperature, all on ``main``.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> default_bindings(ScriptedChatModel())["summary"].describe()
        'custom:ScriptedChatModel'
    """
    return resolve_bindings(TMASConfig(), RoleBook.builtin(), kind="custom",
                            model=describe_model(main))  # fmt: skip


class ModelRouter:
    """Maps each role to a chat model and calls it, with the settings of the role's binding
    (:class:`tmas.llm.bindings.RoleBinding`: temperature, and the budget a node asks with).

    ``overrides`` maps roles to chat models of their own; a role without one uses that of the
    role whose model it borrows (its binding's ``model_of``), else ``main``. ``bindings`` are
    the run's, from its plan; a router made without them knows the package's own roles at
    their defaults. Generation limits travel as invoke kwargs (``max_tokens``,
    ``temperature``, ``seed``), which chat models such as ChatOpenAI and ours forward; set
    ``pass_generation_kwargs=False`` for a model that rejects them. ``max_parallel_calls``
    bounds the calls in flight at once, in threads (:meth:`complete`) and in each event loop
    (:meth:`acall`, which calls the model's async methods through one HTTP client per
    endpoint and loop). Bounding here rather than with LangGraph's ``max_concurrency`` keeps
    a worker free to save each finished call's result at once (LangGraph saves task results
    on the same pool), so a crash loses only the calls that were in flight.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> router = ModelRouter(ScriptedChatModel())
        >>> router.complete("guideline", "You are the guideline agent.", "...", 32, 0).text
        'Strategy: Set up an equation'
    """

    def __init__(
        self,
        main: BaseChatModel,
        overrides: Mapping[Role, BaseChatModel] | None = None,
        *,
        bindings: Mapping[Role, RoleBinding] | None = None,
        pass_generation_kwargs: bool = True,
        max_parallel_calls: int | None = None,
    ) -> None:
        self.main = main
        self.max_parallel_calls = max_parallel_calls
        self._slots = threading.BoundedSemaphore(max_parallel_calls) if max_parallel_calls else None
        self._loop_clients = LoopClients(max_parallel_calls)
        self.overrides = dict(overrides or {})
        self.bindings = dict(bindings) if bindings is not None else default_bindings(main)
        self.pass_generation_kwargs = pass_generation_kwargs
        self.model_role: Role | None = None

    def limited_to(self, max_parallel_calls: int | None) -> ModelRouter:
        """The same models behind a new bound on calls in flight (this router's own bound, if
        it is lower, stays).

        Example:
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> router = ModelRouter(ScriptedChatModel(), max_parallel_calls=2)
            >>> router.limited_to(16).max_parallel_calls, router.limited_to(1).max_parallel_calls
            (2, 1)
        """
        bounds = [b for b in (self.max_parallel_calls, max_parallel_calls) if b]
        return ModelRouter(
            self.main,
            self.overrides,
            bindings=self.bindings,
            pass_generation_kwargs=self.pass_generation_kwargs,
            max_parallel_calls=min(bounds) if bounds else None,
        )

    def with_bindings(self, bindings: Mapping[Role, RoleBinding]) -> ModelRouter:
        """A view with a run's own role ``bindings``, sharing this router's models and bound on
        calls in flight (how a plan is compiled with models a caller built).

        Example:
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> router = ModelRouter(ScriptedChatModel())
            >>> changed = {"verifier": router.binding("verifier").model_copy(
            ...     update={"max_tokens": 9})}
            >>> router.with_bindings(changed).binding("verifier").max_tokens
            9
        """
        view = copy.copy(self)
        view.bindings = dict(bindings)
        return view

    def for_role(self, model_role: Role) -> ModelRouter:
        """A view that serves every call with ``model_role``'s model and temperature, sharing
        this router's bound on calls in flight.

        Example:
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> main, judge = ScriptedChatModel(), ScriptedChatModel()
            >>> view = ModelRouter(main, {"verifier": judge}).for_role("verifier")
            >>> view.model_for("solver") is judge
            True
        """
        view = copy.copy(self)
        view.model_role = model_role
        return view

    def binding(self, role: Role) -> RoleBinding:
        """The binding of ``role`` in this run; UnknownRoleError naming the roles it has.

        Example:
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> ModelRouter(ScriptedChatModel()).binding("verifier").max_tokens
            256
        """
        if role not in self.bindings:
            raise UnknownRoleError(
                f"role {role!r} has no model binding in this run (its roles: "
                f"{', '.join(self.bindings)}); declare it in the topology's roles: block or "
                "with register_role in a plugin"
            )
        return self.bindings[role]

    def model_for(self, role: Role) -> BaseChatModel:
        """The chat model that plays ``role``: its own, else that of the role whose model it
        borrows, else the main model.

        Example:
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> main, judge = ScriptedChatModel(), ScriptedChatModel()
            >>> ModelRouter(main, {"verifier": judge}).model_for("proof_judge") is judge
            True
        """
        played = self.model_role or role
        if played in self.overrides:
            return self.overrides[played]
        lender = getattr(self.bindings.get(played), "model_of", None)
        return self.overrides.get(lender, self.main) if lender else self.main

    def temperature_for(self, role: Role) -> float | None:
        """The sampling temperature of ``role`` (the one played, for a :meth:`for_role` view):
        its binding's (None: the model's default).

        Example:
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> router = ModelRouter(ScriptedChatModel())
            >>> router.temperature_for("verifier"), router.for_role("summary").temperature_for("x")
            (0.7, 0.7)
        """
        binding = self.bindings.get(self.model_role or role)
        return binding.temperature if binding is not None else None

    def _request(self, call: ModelCall) -> tuple[BaseChatModel, dict[str, Any]]:
        """The model and generation kwargs of ``call``."""
        kwargs: dict[str, Any] = {}
        if self.pass_generation_kwargs:
            kwargs = {"max_tokens": call.max_tokens, "seed": call.seed}
            temperature = self.temperature_for(call.role)
            if temperature is not None:
                kwargs["temperature"] = temperature
        return self.model_for(call.role), kwargs

    def complete(
        self,
        role: Role,
        system: str,
        user: str,
        max_tokens: int,
        seed: int,
        *,
        prompt: str | None = None,
    ) -> Completion:
        """Ask ``role``'s model one question and return its reply.

        The call carries ``tmas_role`` (and ``tmas_prompt``, the key of the user prompt's
        template) as metadata, which callbacks, tracing and our test doubles read.

        Any error of the model call is raised as a ``ModelCallError`` (which says whether it is
        transient), its cause attached.

        Example:
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> broken = ScriptedChatModel(fail_when=lambda role, n: True)
            >>> ModelRouter(broken).complete("solver", "You are the solution agent.", "?", 8, 0)
            Traceback (most recent call last):
            ...
            tmas.llm.errors.ModelCallError: solver call failed: RuntimeError: scripted failure ...
        """
        return self.call(ModelCall(role, system, user, max_tokens, seed, prompt))

    def call(self, call: ModelCall) -> Completion:
        """:meth:`complete` for a :class:`ModelCall`, in the calling thread."""
        model, kwargs = self._request(call)
        with self._slots or contextlib.nullcontext():
            try:
                if isinstance(model, EndpointChatModel):
                    return _answered(model.complete(_chat(call), headers=_headers(call), **kwargs))
                reply: AIMessage = model.invoke(_messages(call), config=_run_config(call), **kwargs)
            except GraphBubbleUp:
                raise
            except Exception as exc:
                raise ModelCallError.wrap(call.role, exc, describe_model(model)) from exc
        return _completion(reply)

    async def acall(self, call: ModelCall) -> Completion:
        """:meth:`call` on the running event loop: a model with an async implementation is
        awaited through the loop's own HTTP client; any other runs in the router's threads.
        Calls in flight are bounded per loop by ``max_parallel_calls``; errors are raised as
        in :meth:`complete`.

        Example:
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> router = ModelRouter(ScriptedChatModel(), max_parallel_calls=2)
            >>> call = ModelCall("guideline", "You are the guideline agent.", "...", 32, 0)
            >>> asyncio.run(router.acall(call)).text
            'Strategy: Set up an equation'
        """
        model, kwargs = self._request(call)
        clients = self._loop_clients
        async with clients.slots() or contextlib.nullcontext():
            await clients.hold_if_ending()
            await clients.let_finished_calls_save()
            try:
                if isinstance(model, EndpointChatModel):
                    own = clients.model(model)
                    answer = await own.acomplete(_chat(call), headers=_headers(call), **kwargs)
                    return _answered(answer)
                if answers_async(model):
                    own = clients.model(model)
                    reply: AIMessage = await own.ainvoke(
                        _messages(call), config=_run_config(call), **kwargs
                    )
                else:
                    invoke = functools.partial(
                        model.invoke, _messages(call), config=_run_config(call), **kwargs
                    )
                    context = contextvars.copy_context()
                    reply = await asyncio.get_running_loop().run_in_executor(
                        clients.executor(), context.run, invoke
                    )
            except GraphBubbleUp:
                raise
            except Exception as exc:
                error = ModelCallError.wrap(call.role, exc, describe_model(model))
                if error.fatal:
                    clients.end_calls()
                raise error from exc
            except asyncio.CancelledError:
                raise
            except BaseException:  # interrupted, or the process is going down
                clients.end_calls()
                raise
        return _completion(reply)

    async def aclose(self) -> None:
        """Close the HTTP clients the running event loop opened (at the end of its run).

        Example:
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> asyncio.run(ModelRouter(ScriptedChatModel()).aclose())
        """
        await self._loop_clients.aclose()


def _messages(call: ModelCall) -> list[Any]:
    return [SystemMessage(call.system), HumanMessage(call.user)]


def _run_config(call: ModelCall) -> dict[str, Any]:
    """What a LangChain model's callbacks and tracing see of a call: its role and prompt."""
    return {"tags": [f"tmas:{call.role}"], "metadata": call_metadata(call.role, call.prompt)}


def _chat(call: ModelCall) -> list[dict[str, str]]:
    return [{"role": "system", "content": call.system}, {"role": "user", "content": call.user}]


def _headers(call: ModelCall) -> dict[str, str]:
    return role_headers(call_metadata(call.role, call.prompt))


def _answered(reply: ChatReply) -> Completion:
    return Completion(reply.text, reply.input_tokens, reply.output_tokens)


def _completion(reply: Any) -> Completion:
    input_tokens, output_tokens = _usage_of(reply)
    return Completion(_text_of(reply), input_tokens, output_tokens)
