"""From token ids to answers for an in-process model: the chat prompt's ids, the tokens that
end an answer, and a generated row cut into a :class:`Choice`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tmas.llm.chat_results import Choice
from tmas.llm.hf.model_loading import LoadedModel


def cut_at_stop(text: str, stop: Sequence[str] | None) -> tuple[str, bool]:
    """``text`` up to the first stop string, and whether one was found.

    Example:
        >>> cut_at_stop("x = 3\\nEND more", ["END"])
        ('x = 3\\n', True)
    """
    cut = min((text.find(s) for s in stop or () if s and s in text), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def generated_length(ids: Sequence[int], eos_ids: set[int]) -> tuple[int, bool]:
    """How many of ``ids`` were generated (through the first end token, padding after it left
    out), and whether an end token was reached.

    Example:
        >>> generated_length([5, 6, 2, 2, 2], {2})
        (3, True)
    """
    for position, token in enumerate(ids):
        if token in eos_ids:
            return position + 1, True
    return len(ids), False


def chat_prompt_ids(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
    """The token ids of a chat as the model's template writes it, ready for its answer (call
    it holding the model's lock: fast tokenizers are not re-entrant).

    Example (with ``tmas[train]``)::

        ids = chat_prompt_ids(loaded.tokenizer, [{"role": "user", "content": "Hi"}])
    """
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def eos_ids(loaded: LoadedModel) -> set[int]:
    """The tokens that end an answer: the generation config's and the tokenizer's.

    Example (with ``tmas[train]``)::

        eos_ids(load_model("smollm2"))  # {2}
    """
    eos = loaded.model.generation_config.eos_token_id
    ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    if loaded.tokenizer.eos_token_id is not None:
        ids.add(loaded.tokenizer.eos_token_id)
    return {int(i) for i in ids}


def answer_of(tokenizer: Any, row: Sequence[int], ends: set[int], stop: Sequence[str]) -> Choice:
    """The answer a generated row of token ids holds: decoded through its first end token,
    cut at the first stop string; ``stop`` when either ended it, else ``length``.

    Example:
        >>> class Letters:
        ...     def decode(self, ids, skip_special_tokens): return "".join(chr(i) for i in ids)
        >>> answer_of(Letters(), [104, 105, 2, 2], {2}, ())
        Choice(text='hi\\x02', tokens=3, finish_reason='stop')
    """
    length, ended = generated_length(row, ends)
    text, stopped = cut_at_stop(tokenizer.decode(row[:length], skip_special_tokens=True), stop)
    return Choice(text, length, "stop" if ended or stopped else "length")
