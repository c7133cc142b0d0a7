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

from langgraph.config import get_config

from tmas.llm.hf.latent_trace import Segment, base_weights
from tmas.llm.hf.trace_store import TRACES
from tmas.nodes.agents.chain import (
    agent_messages,
    answer_candidate,
    chain_records,
    with_record,
)
from tmas.nodes.agents.solver import failed_candidate
from tmas.nodes.prompts import PromptSet
from tmas.roles import Role
from tmas.state import RunState


def run_key(state: RunState) -> str:
    """Which trace a node works on: its run (thread) and iteration."""
    try:
        thread = str(get_config()["configurable"].get("thread_id", "default"))
    except RuntimeError:  # called outside a graph
        thread = "default"
    return f"{thread}:{state.get('iteration', 0)}"


def prompt_ids(tokenizer: Any, messages: list[dict[str, str]]) -> tuple[int, ...]:
    """The token ids of one agent's turn, as the model's chat template writes it."""
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return tuple(tokenizer(text, add_special_tokens=False)["input_ids"])


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
    thinks), as the node and ``tmas train latent`` both build it."""
    return Segment(
        agent=agent,
        prompt_ids=prompt_ids(tokenizer, agent_messages(prompts, agent, problem)),
        latent_steps=latent_steps,
        realign=realign,
        keep_prompt=keep_prompt,
    )


def final_prompt_ids(tokenizer: Any, prompts: PromptSet, agent: str, problem: str) -> list[int]:
    """The final agent's turn, read over the trace before it answers."""
    return list(prompt_ids(tokenizer, agent_messages(prompts, agent, problem)))


def segments_before(state: RunState) -> list[Segment]:
    """The segments the agents before this one left, from the state."""
    return [Segment.from_record(r["segment"]) for r in chain_records(state) if "segment" in r]


def agent_usage(role: Role, input_tokens: int, output_tokens: int) -> dict[str, Any]:
    """One call's usage update of ``role``.

    Example:
        >>> agent_usage("planner", 40, 0)
        {'usage': {'planner': {'calls': 1, 'input_tokens': 40, 'output_tokens': 0}}}
    """
    counts = {"calls": 1, "input_tokens": input_tokens, "output_tokens": output_tokens}
    return {"usage": {role: counts}}


class LatentAgent:
    """Node: one upstream agent adds its segment (prompt, then latent steps) to the trace."""

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
        segment = make_segment(
            self.loaded.tokenizer,
            self.prompts,
            self.agent,
            state["problem"],
            self.latent_steps,
            self.realign,
            self.keep_prompt,
        )
        model = self.loaded.model
        with self.loaded.lock:
            trace = TRACES.trace_for(run_key(state), model, segments_before(state))
            with base_weights(model):
                trace.add(segment)
            length = trace.length()
        record = {
            "agent": self.agent,
            "iteration": state.get("iteration", 0),
            "segment": segment.record(),
            "prompt_tokens": len(segment.prompt_ids),
            "latent_steps": self.latent_steps,
            "cache_length": length,
        }
        return {**with_record(state, record), **agent_usage(self.role, len(segment.prompt_ids), 0)}


class LatentAnswer:
    """Node: the final agent reads the trace and decodes the answer of one plan (a task of
    ``chain_answer_tasks``; the plans of an iteration share one trace, each its own seed;
    greedy at temperature 0)."""

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

    def _eos_ids(self) -> set[int]:
        eos = self.loaded.model.generation_config.eos_token_id
        ids = eos if isinstance(eos, list) else [eos] if eos is not None else []
        return {int(i) for i in ids} | {int(self.loaded.tokenizer.eos_token_id)}

    def __call__(self, task: dict[str, Any]) -> dict[str, Any]:
        tokenizer, plan = self.loaded.tokenizer, task["plan"]
        ids = final_prompt_ids(tokenizer, self.prompts, self.agent, task["problem"])
        with self.loaded.lock:
            trace = TRACES.trace_for(run_key(task), self.loaded.model, segments_before(task))
            tokens, _ = trace.decode(
                ids,
                max_tokens=self.max_tokens,
                eos_ids=self._eos_ids(),
                temperature=self.temperature,
                seed=plan["seed"],
            )
            length = trace.length()
        text = tokenizer.decode(tokens, skip_special_tokens=True)
        record = {
            "agent": self.agent,
            "iteration": task.get("iteration", 0),
            "prompt_tokens": len(ids),
            "cache_length": length,
        }
        return {
            "candidates": [answer_candidate(plan, text, len(ids), len(tokens))],
            **with_record(task, record),
            **agent_usage(self.role, len(ids), len(tokens)),
        }

    def on_failure(self, task: dict[str, Any], error: str) -> dict[str, Any]:
        """The candidate that stands for a failed answer."""
        return {"candidates": [failed_candidate(task, error)]}
