"""Render a chat with a GGUF's own Jinja chat template (ChatML when the file has none)."""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import Any

_CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _raise(message: str) -> None:
    raise ValueError(f"chat template: {message}")


class ChatRenderer:
    """Formats OpenAI-style messages into the prompt text the model was trained on.

    Example:
        >>> renderer = ChatRenderer(None)
        >>> renderer.render([{"role": "user", "content": "hi"}])
        '<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\n'
    """

    def __init__(self, template: str | None, *, bos: str = "", eos: str = "") -> None:
        self.source = template or _CHATML
        self.bos = bos
        self.eos = eos

    @cached_property
    def _template(self) -> Any:
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
        return env.from_string(self.source)

    def render(self, messages: list[dict[str, str]]) -> str:
        """The prompt for ``messages``, ending where the assistant's answer starts."""
        return self._template.render(
            messages=messages,
            add_generation_prompt=True,
            bos_token=self.bos,
            eos_token=self.eos,
        )
