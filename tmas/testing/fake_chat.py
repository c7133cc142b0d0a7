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

from tmas.testing.scripted import ScriptedReplies, scripted_reply

__all__ = ["ScriptedChatModel", "ScriptedReplies", "SimulatedCrash"]


class SimulatedCrash(BaseException):  # noqa: N818 - named for what it stands for
    """Stands for the process dying in the middle of a model call (kill -9, power loss): like a
    ``KeyboardInterrupt`` it is no ``Exception``, so no handler of a failed call records it and
    it ends the run there, its checkpoints intact. Raise it from ``fail_when``."""


class ScriptedChatModel(BaseChatModel):
    """Answers each TMAS role with a canned reply and counts calls per role.

    The role and prompt of a call come from its metadata (``tmas_role``/``tmas_prompt``, set
    by :class:`tmas.llm.router.ModelRouter`). ``fail_when`` lets a test make chosen calls
    raise: it receives (role, call_number_of_role) and returns True to raise ``RuntimeError``
    (a failed call), or raises itself (e.g. ``ConnectionError`` for a transient failure,
    ``SimulatedCrash`` for a crash).

    Example:
        >>> from langchain_core.messages import SystemMessage, HumanMessage
        >>> model = ScriptedChatModel()
        >>> msg = model.invoke([SystemMessage("Solve it."), HumanMessage("1+1")],
        ...                    config={"metadata": {"tmas_role": "solver"}})
        >>> model.calls["solver"], "boxed" in msg.content
        (1, True)
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
        metadata = (run_manager.metadata if run_manager is not None else None) or {}
        role, prompt = metadata.get("tmas_role"), metadata.get("tmas_prompt")
        with self._lock:
            self._calls[role] += 1
            number = self._calls[role]
        if self.fail_when is not None and self.fail_when(role, number):
            raise RuntimeError(f"scripted failure of {role} call {number}")
        salt = str(kwargs.get("seed", ""))
        text = scripted_reply(self.replies, dicts, salt, role=role, prompt=prompt)
        prompt_tokens = sum(len(d["content"].split()) for d in dicts)
        usage = {
            "input_tokens": prompt_tokens,
            "output_tokens": len(text.split()),
            "total_tokens": prompt_tokens + len(text.split()),
        }
        message = AIMessage(content=text, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])
