"""Which chat models expose their weights: agents that pass latents need the model itself (its
hidden states and KV cache), not an HTTP API."""

from __future__ import annotations

from typing import Any

from tmas.llm.calls import describe_model


class LatentModelError(ValueError):
    """A topology that passes latents was given a model without reachable internals."""


def loaded_model_of(chat_model: Any, node: str) -> Any:
    """The in-process transformers model behind ``chat_model`` (``--backend hf``), or
    LatentModelError naming the node and the model.

    Example:
        >>> from tmas.testing.fake_chat import ScriptedChatModel
        >>> loaded_model_of(ScriptedChatModel(), "planner")
        Traceback (most recent call last):
        ...
        tmas.llm.hf.internals.LatentModelError: node 'planner' passes latents: it needs the ...
    """
    loaded = getattr(type(chat_model), "loaded", None)
    if loaded is None:
        raise LatentModelError(
            f"node {node!r} passes latents: it needs the model's hidden states and KV cache, "
            f"which {describe_model(chat_model)} does not expose; run it in-process with "
            "--backend hf (transformers), or use the text topology (text_mas)"
        )
    return chat_model.loaded
