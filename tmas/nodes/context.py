"""What a node is built with: the run's settings, its models and prompts, and its role.

A node's role (its spec's ``role:``, else its node type's own) is the one name that gives it
its model, its answer budget, its usage row and its prompt namespace: a node of role ``critic``
renders ``critic/<name>`` where the run has that template, else its type's own
``<group>/<name>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tmas.config import TMASConfig
from tmas.llm.calls import Completion, ModelCall
from tmas.nodes.channels import ChannelSpec
from tmas.nodes.prompts import PromptSet

if TYPE_CHECKING:  # the router loads the model stack; a node's context only names it
    from tmas.llm.router import ModelRouter


@dataclass(frozen=True)
class NodeContext:
    """What a node factory may use.

    ``config``: the run's settings; ``router``: its models and the binding of each role (a
    node given a ``role:`` in its spec gets a view that serves every call with that role's
    model); ``prompts``: the run's templates; ``role``: the node's role; ``group``: its type's
    own prompt namespace; ``channels``: the run's declared channels; ``compile_body``:
    compiles a pipeline's body with the same settings (set by the compiler).

    Example:
        >>> from tmas.llm.router import ModelRouter
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> ctx = NodeContext(TMASConfig(), ModelRouter(ScriptedChatModel()), role="critic",
        ...                   group="verifier")
        >>> ctx.prompt_key("user"), ctx.max_tokens_of("verifier")
        ('verifier/user', 256)
    """

    config: TMASConfig
    router: ModelRouter
    prompts: PromptSet = field(default_factory=PromptSet)
    role: str = "solver"
    group: str | None = None
    channels: Mapping[str, ChannelSpec] = field(default_factory=dict)
    compile_body: Callable[[Any], Any] | None = None

    @property
    def max_tokens(self) -> int:
        """The answer budget of the node's role."""
        return self.max_tokens_of(self.role)

    def max_tokens_of(self, role: str) -> int:
        """The answer budget of ``role`` in this run (its binding's)."""
        return self.router.binding(role).max_tokens

    def prompt_key(self, name: str) -> str:
        """The template the node renders as ``name``: its role's, else its type's group's.

        Example:
            >>> from tmas.llm.router import ModelRouter
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> ctx = NodeContext(TMASConfig(), ModelRouter(ScriptedChatModel()),
            ...                   PromptSet({"critic/user": "{solution}"}), "critic", "verifier")
            >>> ctx.prompt_key("user"), ctx.prompt_key("system")
            ('critic/user', 'verifier/system')
        """
        return self.prompts.key_for(self.role, self.group, name)

    def render(self, name: str, **fields: object) -> str:
        """Template ``name`` of the node's namespace filled with ``fields``."""
        return self.prompts.render(self.prompt_key(name), **fields)

    def ask(
        self,
        fields: Mapping[str, object],
        *,
        seed: int,
        user: str = "user",
        system: str = "system",
    ) -> ModelCall:
        """The node's model call: its ``system`` and ``user`` templates filled with ``fields``,
        its role and its role's budget.

        Example:
            >>> from tmas.llm.router import ModelRouter
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> ctx = NodeContext(TMASConfig(), ModelRouter(ScriptedChatModel()),
            ...                   role="verifier", group="verifier")
            >>> call = ctx.ask({"problem": "1+1?", "solution": "2"}, seed=0)
            >>> call.role, call.max_tokens, call.prompt
            ('verifier', 256, 'verifier/user')
        """
        return ModelCall(
            self.role,
            self.render(system, **fields),
            self.render(user, **fields),
            self.max_tokens,
            seed,
            prompt=self.prompt_key(user),
        )

    def complete(
        self,
        fields: Mapping[str, object],
        *,
        seed: int | None = None,
        user: str = "user",
        system: str = "system",
    ) -> Completion:
        """Make the node's model call (:meth:`ask`) now, in the calling thread; ``seed``
        defaults to the run's.

        Example:
            >>> from tmas.llm.router import ModelRouter
            >>> from tmas.testing.fake_chat import ScriptedChatModel
            >>> ctx = NodeContext(TMASConfig(), ModelRouter(ScriptedChatModel()),
            ...                   role="guideline", group="guideline")
            >>> ctx.complete({"problem": "1+1?", "solution": "2"}).text
            'Strategy: Count case by case'
        """
        chosen = self.config.seed if seed is None else seed
        return self.router.call(self.ask(fields, seed=chosen, user=user, system=system))

    def usage(self, reply: Completion) -> dict[str, dict[str, int]]:
        """``reply`` as a ``usage`` state update, under the node's role."""
        return reply.usage(self.role)
