"""One model call as plain values: the question a role asks (:class:`ModelCall`), its reply
(:class:`Completion`) and the metadata it carries. No model library is imported here, so
nodes and the command line can name calls without loading one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tmas.roles import Role


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


@dataclass(frozen=True)
class ModelCall:
    """One question for a role's model: what :meth:`ModelRouter.complete` takes, as a value
    an agent can hand over (see :class:`tmas.nodes.common.SteppedAgent`).

    Example:
        >>> ModelCall("solver", "You solve.", "1+1?", 16, 0).role
        'solver'
    """

    role: Role
    system: str
    user: str
    max_tokens: int
    seed: int
    prompt: str | None = None


def call_metadata(role: Role, prompt: str | None = None) -> dict[str, str]:
    """The metadata a model call carries: its role and the key of its prompt template.

    Example:
        >>> call_metadata("verifier", "verifier/user")
        {'tmas_role': 'verifier', 'tmas_prompt': 'verifier/user'}
    """
    return {"tmas_role": role, **({"tmas_prompt": prompt} if prompt else {})}


def describe_model(model: Any) -> str:
    """A chat model's name for messages: its model name and, for an endpoint, where it is.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> describe_model(ScriptedChatModel())
        'ScriptedChatModel'
    """
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    where = getattr(model, "openai_api_base", None) or getattr(model, "base_url", None)
    text = repr(name) if isinstance(name, str) and name else type(model).__name__
    return f"{text} at {where}" if where else text
