"""Agents that pass latents (LatentMAS): each extends the run's shared KV cache with its prompt
and its latent steps; the last one reads the cache and writes the answers.

The cache lives in process memory (:mod:`tmas.llm.hf.trace_store`, the least recently used
traces dropped first); the state keeps each
agent's segment (its prompt's token ids and settings), from which a resumed run rebuilds the
same cache. With a LoRA adapter loaded (``--adapter``, trained by ``tmas train latent``) the
upstream agents run on the base weights and only the final agent uses the adapter.
"""

from __future__ import annotations

from typing import Any

from tmas.llm.calls import Completion
from tmas.llm.errors import ModelCallError
from tmas.llm.hf.latent_trace import Segment, base_weights
from tmas.llm.hf.trace_store import TRACES
from tmas.nodes.agents.chain import agent_messages, chain_records, with_record
from tmas.nodes.agents.solver import failed_candidate
from tmas.nodes.common import answer_update
from tmas.nodes.prompts import PromptSet
from tmas.roles import Role
from tmas.state import RunState


def run_of(state: RunState) -> tuple[str, int]:
    """Which trace a node works on: its run (thread id) and the iteration.

    Example:
        >>> run_of({"iteration": 2})
        ('default', 2)
    """
    try:
        from langgraph.config import get_config

        thread = str(get_config()["configurable"].get("thread_id", "default"))
    except RuntimeError:  # called outside a graph
        thread = "default"
    return thread, int(state.get("iteration", 0))


def make_segment(
    tokenizer: Any,
    prompts: PromptSet,
    agent: str,
    problem: str,
    latent_steps: int,
    realign: bool,
    keep_prompt: bool,
) -> Segment:
    """What an upstream agent adds to the trace for ``problem`` (its turn's tokens and how it
    thinks), as the node and ``tmas train latent`` both build it.

    Example (with ``tmas[train]``)::

        segment = make_segment(tokenizer, PromptSet(), "planner", "1+1?", 8, True, True)
    """
    from tmas.llm.hf.decoding import chat_prompt_ids  # loads with the model

    ids = chat_prompt_ids(tokenizer, agent_messages(prompts, agent, problem))
    return Segment(agent, tuple(ids), latent_steps, realign, keep_prompt)


def final_prompt_ids(
    tokenizer: Any, prompts: PromptSet, agent: str, problem: str, notes: str = ""
) -> list[int]:
    """The final agent's turn, read over the trace (and the text agents' ``notes``) before it
    answers.

    Example (with ``tmas[train]``)::

        ids = final_prompt_ids(tokenizer, PromptSet(), "judger", "1+1?")
    """
    from tmas.llm.hf.decoding import chat_prompt_ids  # loads with the model

    return chat_prompt_ids(tokenizer, agent_messages(prompts, agent, problem, notes))


def segments_before(state: RunState) -> list[Segment]:
    """The segments the agents before this one left, from the state.

    Example:
        >>> segments_before({"iteration": 1, "extras": {"agents": [{"agent": "p",
        ...     "iteration": 1, "segment": Segment("p", (1,), 2, True, True).record()}]}})
        [Segment(agent='p', prompt_ids=(1,), latent_steps=2, realign=True, keep_prompt=True)]
    """
    return [Segment.from_record(r["segment"]) for r in chain_records(state) if "segment" in r]


class LatentAgent:
    """Node: one upstream agent adds its segment (prompt, then latent steps) to the trace. A
    failure of the model is a failed call of its role (retried, then recorded; the chain goes
    on without its segment)."""

    def __init__(
        self,
        loaded: Any,
        prompts: PromptSet,
        role: Role,
        agent: str,
        latent_steps: int,
        realign: bool,
        keep_prompt: bool,
    ) -> None:
        self.loaded, self.prompts, self.role, self.agent = loaded, prompts, role, agent
        self.latent_steps, self.realign, self.keep_prompt = latent_steps, realign, keep_prompt

    def __call__(self, state: RunState) -> dict[str, Any]:
        model = self.loaded.model
        try:
            with self.loaded.lock:  # the model, and the tokenizer (not re-entrant)
                segment = make_segment(self.loaded.tokenizer, self.prompts, self.agent,
                                       state["problem"], self.latent_steps, self.realign,
                                       self.keep_prompt)  # fmt: skip
                trace = TRACES.trace_for(*run_of(state), model, segments_before(state))
                with base_weights(model):
                    trace.add(segment)
                length = trace.length()
        except Exception as exc:  # noqa: BLE001 - every model failure is a failed call
            raise ModelCallError.wrap(self.role, exc, "the in-process model") from exc
        record = {
            "agent": self.agent,
            "iteration": state.get("iteration", 0),
            "segment": segment.record(),
            "cache_length": length,
        }
        usage = Completion("", len(segment.prompt_ids), 0).usage(self.role)
        return {**with_record(state, record), "usage": usage}


class LatentAnswer:
    """Node: the final agent reads the trace and decodes the answer of one plan (a task of
    ``chain_answer_tasks``; the plans of an iteration share one trace, each its own seed;
    greedy at temperature 0). A failed decode stands as a failed candidate."""

    def __init__(
        self,
        loaded: Any,
        prompts: PromptSet,
        role: Role,
        agent: str,
        max_tokens: int,
        temperature: float,
    ) -> None:
        self.loaded, self.prompts, self.role, self.agent = loaded, prompts, role, agent
        self.max_tokens, self.temperature = max_tokens, temperature

    def __call__(self, task: dict[str, Any]) -> dict[str, Any]:
        from tmas.llm.hf.decoding import eos_ids  # loads with the model

        tokenizer, plan = self.loaded.tokenizer, task["plan"]
        try:
            with self.loaded.lock:
                ids = final_prompt_ids(tokenizer, self.prompts, self.agent, task["problem"])
                trace = TRACES.trace_for(*run_of(task), self.loaded.model, segments_before(task))
                tokens, _ = trace.decode(
                    ids,
                    max_tokens=self.max_tokens,
                    eos_ids=eos_ids(self.loaded),
                    temperature=self.temperature,
                    seed=plan["seed"],
                )
                text = tokenizer.decode(tokens, skip_special_tokens=True)
                length = trace.length()
        except Exception as exc:  # noqa: BLE001 - every model failure is a failed call
            raise ModelCallError.wrap(self.role, exc, "the in-process model") from exc
        record = {"agent": self.agent, "iteration": task.get("iteration", 0),
                  "prompt_tokens": len(ids), "cache_length": length}  # fmt: skip
        update = answer_update(plan, Completion(text, len(ids), len(tokens)), self.role)
        return {**update, **with_record(task, record)}

    def on_failure(self, task: dict[str, Any], error: str) -> dict[str, Any]:
        """The candidate that stands for a failed answer."""
        return {"candidates": [failed_candidate(task, error)]}
