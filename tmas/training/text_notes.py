"""Stage I of training the final agent of a text chain (``text_mas``): the notes its upstream
agents write for a problem, on the base weights, greedy, each agent reading the notes of the
agents before it, with the same prompts and budgets the text agents use at run time. The final
agent then learns to answer from these notes, as the final agent of a latent chain learns to
answer from the trace.
"""

from __future__ import annotations

from typing import Any

from tmas.llm.hf.decoding import chat_prompt_ids
from tmas.llm.hf.latent_trace import base_weights
from tmas.nodes.agents.chain import agent_messages, notes_of
from tmas.training.latent_chain import LatentChain


def written_notes(
    model: Any, tokenizer: Any, chain: LatentChain, problem: str, max_tokens: int | None = None
) -> str:
    """The ``notes`` field the final agent reads for ``problem``: what the chain's text agents
    wrote (greedy, each at most its role's budget, or ``max_tokens`` when given).

    Example (with ``tmas[train]``)::

        notes = written_notes(model, tokenizer, LatentChain.from_spec(spec), "1+1?")
    """
    import torch

    records: list[dict[str, Any]] = []
    for agent in chain.upstream:
        messages = agent_messages(
            chain.prompts, agent.agent, problem, notes_of(chain.prompts, records)
        )
        ids = chat_prompt_ids(tokenizer, messages)
        inputs = torch.tensor([ids], device=model.device)
        with torch.no_grad(), base_weights(model):
            output = model.generate(
                input_ids=inputs,
                attention_mask=torch.ones_like(inputs),
                max_new_tokens=int(max_tokens or agent.max_tokens),
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
            )
        text = tokenizer.decode(output[0, len(ids) :].tolist(), skip_special_tokens=True)
        records.append({"agent": agent.agent, "text": text})
    return notes_of(chain.prompts, records)
