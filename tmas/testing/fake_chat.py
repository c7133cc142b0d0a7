"""A thread-safe, role-aware fake chat model built on langchain-core's BaseChatModel."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

from tmas.roles import role_of_prompt
from tmas.testing.scripted import ScriptedReplies, scripted_reply

__all__ = ["ScriptedChatModel", "ScriptedReplies", "SimulatedCrash"]


class SimulatedCrash(BaseException):  # noqa: N818 - named for what it stands for
    """Stands for the process dying in the middle of a model call (kill -9, power loss): like a
    ``KeyboardInterrupt`` it is no ``Exception``, so no handler of a failed call records it and
    it ends the run there, its checkpoints intact. Raise it from ``fail_when``."""


class ScriptedChatModel(BaseChatModel):
    """Answers each TMAS role with a canned reply and counts calls per role.

    ``fail_when`` lets a test make chosen calls raise: it receives (role, call_number_of_role)
    and returns True to raise ``RuntimeError`` (a failed call), or raises itself (e.g.
    ``ConnectionError`` for a transient failure, ``SimulatedCrash`` for a crash).

    Example:
        >>> from langchain_core.messages import SystemMessage, HumanMessage
        >>> model = ScriptedChatModel()
        >>> msg = model.invoke([SystemMessage("You are the solution agent."), HumanMessage("1+1")])
        >>> model.calls["solver"]
        1
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    replies: ScriptedReplies = Field(default_factory=ScriptedReplies)
    fail_when: Any = None
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _calls: Counter = PrivateAttr(default_factory=Counter)

    @property
    def _llm_type(self) -> str:
        return "tmas-scripted"

    @property
    def calls(self) -> Counter:
        """Calls made so far, per role (``None`` for prompts of no known role)."""
        with self._lock:
            return Counter(self._calls)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        dicts = [
            {"role": "system" if m.type == "system" else "user", "content": str(m.content)}
            for m in messages
        ]
        system = "\n".join(d["content"] for d in dicts if d["role"] == "system")
        role = role_of_prompt(system)
        with self._lock:
            self._calls[role] += 1
            number = self._calls[role]
        if self.fail_when is not None and self.fail_when(role, number):
            raise RuntimeError(f"scripted failure of {role} call {number}")
        text = scripted_reply(self.replies, dicts, salt=str(kwargs.get("seed", "")))
        prompt_tokens = sum(len(d["content"].split()) for d in dicts)
        usage = {
            "input_tokens": prompt_tokens,
            "output_tokens": len(text.split()),
            "total_tokens": prompt_tokens + len(text.split()),
        }
        message = AIMessage(content=text, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])
