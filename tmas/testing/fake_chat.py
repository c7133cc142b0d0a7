"""A thread-safe, role-aware fake chat model built on langchain-core's BaseChatModel."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr

from tmas.seeding import derive_seed
from tmas.testing.scripted import ScriptedReplies, scripted_reply

__all__ = ["ScriptedCall", "ScriptedChatModel", "ScriptedReplies", "SimulatedCrash"]


@dataclass(frozen=True)
class ScriptedCall:
    """One call a scripted model answered: its role and prompt key (from the call's metadata),
    the system and user text, the generation kwargs (``max_tokens``, ``seed``, ...) and the
    reply."""

    role: str | None
    prompt: str | None
    system: str
    user: str
    kwargs: dict[str, Any]
    reply: str

    @property
    def seed(self) -> int | None:
        """The call's seed, if it was given one."""
        return self.kwargs.get("seed")


class SimulatedCrash(BaseException):  # noqa: N818 - named for what it stands for
    """Stands for the process dying in the middle of a model call (kill -9, power loss): like a
    ``KeyboardInterrupt`` it is no ``Exception``, so no handler of a failed call records it and
    it ends the run there, its checkpoints intact. Raise it from ``fail_when``."""


class ScriptedChatModel(BaseChatModel):
    """Answers each TMAS role with a canned reply, counts calls per role and keeps a log of
    every call (:class:`ScriptedCall`).

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
    _log: list[ScriptedCall] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "tmas-scripted"

    @property
    def calls(self) -> Counter:
        """Calls made so far, per role (``None`` for prompts of no known role)."""
        with self._lock:
            return Counter(self._calls)

    @property
    def log(self) -> list[ScriptedCall]:
        """Every call answered so far, in the order they were answered."""
        with self._lock:
            return list(self._log)

    def calls_of(self, role: str) -> list[ScriptedCall]:
        """The answered calls of ``role``."""
        return [call for call in self.log if call.role == role]

    def solver_calls(self, seed: int, iterations: int) -> dict[tuple[int, int], ScriptedCall]:
        """The solver calls by (iteration, candidate index), found from the seeds that runs with
        config seed ``seed`` give them (the last call of each, after any retry)."""
        where = {
            derive_seed(seed, "solve", iteration, index): (iteration, index)
            for iteration in range(1, iterations + 1)
            for index in range(256)
        }
        return {where[call.seed]: call for call in self.calls_of("solver") if call.seed in where}

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
        system = "\n".join(d["content"] for d in dicts if d["role"] == "system")
        user = "\n".join(d["content"] for d in dicts if d["role"] != "system")
        with self._lock:
            self._log.append(ScriptedCall(role, prompt, system, user, dict(kwargs), text))
        message = AIMessage(content=text, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])
