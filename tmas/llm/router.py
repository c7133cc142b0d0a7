"""One place that calls chat models for the agents: picks the role's model, sets limits, counts."""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.errors import GraphBubbleUp

from tmas.config import TMASConfig
from tmas.llm.errors import ModelCallError
from tmas.roles import Role, model_key


@dataclass(frozen=True)
class Completion:
    """The text of one model reply and its token counts."""

    text: str
    input_tokens: int
    output_tokens: int

    def usage(self, role: Role) -> dict[str, dict[str, int]]:
        """This call as a ``usage`` state update.

        Example:
            >>> Completion("hi", 3, 1).usage("solver")
            {'solver': {'calls': 1, 'input_tokens': 3, 'output_tokens': 1}}
        """
        return {
            role: {
                "calls": 1,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
            }
        }


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


def describe_model(model: Any) -> str:
    """A chat model's name for messages: its model name and, for an endpoint, where it is.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> describe_model(ScriptedChatModel())
        'ScriptedChatModel'
    """
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    where = getattr(model, "openai_api_base", None)
    text = repr(name) if isinstance(name, str) and name else type(model).__name__
    return f"{text} at {where}" if where else text


def call_metadata(role: Role, prompt: str | None = None) -> dict[str, str]:
    """The metadata a model call carries: its role and the key of its prompt template.

    Example:
        >>> call_metadata("verifier", "verifier/user")
        {'tmas_role': 'verifier', 'tmas_prompt': 'verifier/user'}
    """
    return {"tmas_role": role, **({"tmas_prompt": prompt} if prompt else {})}


class ModelRouter:
    """Maps each role to a chat model (the main one unless overridden) and calls it.

    Generation limits travel as invoke kwargs (``max_tokens``, ``temperature``, ``seed``),
    which chat models such as ChatOpenAI and ours forward; set ``pass_generation_kwargs=False``
    for a model that rejects them. ``max_parallel_calls`` bounds the calls in flight at once.
    Bounding here rather than with LangGraph's ``max_concurrency`` keeps a worker free to save
    each finished call's result at once (LangGraph saves task results on the same pool), so a
    crash loses only the calls that were in flight.

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
        temperature: float | None = None,
        role_temperatures: Mapping[Role, float] | None = None,
        pass_generation_kwargs: bool = True,
        max_parallel_calls: int | None = None,
    ) -> None:
        self.main = main
        self.max_parallel_calls = max_parallel_calls
        self._slots = threading.BoundedSemaphore(max_parallel_calls) if max_parallel_calls else None
        self.overrides = dict(overrides or {})
        self.temperature = temperature
        self.role_temperatures = dict(role_temperatures or {})
        self.pass_generation_kwargs = pass_generation_kwargs
        self.model_role: Role | None = None

    @classmethod
    def for_config(
        cls,
        main: BaseChatModel,
        overrides: Mapping[Role, BaseChatModel] | None,
        config: TMASConfig,
        max_parallel_calls: int | None = None,
    ) -> ModelRouter:
        """A router using ``config``'s temperature and its per-role temperature overrides.

        Example:
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> ModelRouter.for_config(ScriptedChatModel(), None, TMASConfig()).temperature
            0.7
        """
        temperatures = {
            role: settings.temperature
            for role, settings in config.roles.items()
            if settings.temperature is not None
        }
        return cls(
            main,
            overrides,
            temperature=config.temperature,
            role_temperatures=temperatures,
            max_parallel_calls=max_parallel_calls,
        )

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
            temperature=self.temperature,
            role_temperatures=self.role_temperatures,
            pass_generation_kwargs=self.pass_generation_kwargs,
            max_parallel_calls=min(bounds) if bounds else None,
        )

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

    def model_for(self, role: Role) -> BaseChatModel:
        """The chat model that plays ``role``: its own override, else that of the role whose
        model it borrows, else the main model."""
        role = self.model_role or role
        return self.overrides.get(role) or self.overrides.get(model_key(role), self.main)

    def temperature_for(self, role: Role) -> float | None:
        """The sampling temperature of ``role``: its own, else that of the role whose model it
        borrows, else the run's (None: the model's default).

        Example:
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> router = ModelRouter(ScriptedChatModel(), temperature=0.7,
            ...                      role_temperatures={"verifier": 0.0})
            >>> router.temperature_for("verifier"), router.temperature_for("solver")
            (0.0, 0.7)
        """
        played = self.model_role or role
        return self.role_temperatures.get(
            played, self.role_temperatures.get(model_key(played), self.temperature)
        )

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
        kwargs: dict[str, Any] = {}
        if self.pass_generation_kwargs:
            kwargs = {"max_tokens": max_tokens, "seed": seed}
            temperature = self.temperature_for(role)
            if temperature is not None:
                kwargs["temperature"] = temperature
        model = self.model_for(role)
        with self._slots or contextlib.nullcontext():
            try:
                reply: AIMessage = model.invoke(
                    [SystemMessage(system), HumanMessage(user)],
                    config={"tags": [f"tmas:{role}"], "metadata": call_metadata(role, prompt)},
                    **kwargs,
                )
            except GraphBubbleUp:
                raise
            except Exception as exc:
                raise ModelCallError.wrap(role, exc, describe_model(model)) from exc
        input_tokens, output_tokens = _usage_of(reply)
        return Completion(_text_of(reply), input_tokens, output_tokens)
