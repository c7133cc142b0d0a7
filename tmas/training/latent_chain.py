"""The agents of a latent topology, read from its spec, and the training example of one problem:
the upstream agents' segments (stage I) and the final agent's turn with its target (stage II).

Training reads the chain from the same spec a run compiles, so the adapter learns to read
exactly the trace that ``latent_mas`` (or a user's latent topology) builds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tmas.graphs.catalog import NODE_TYPES
from tmas.graphs.spec import GraphSpec
from tmas.llm.hf.latent_trace import LatentTrace, Segment, base_weights
from tmas.nodes.agents.latent_agents import final_prompt_ids, make_segment
from tmas.nodes.prompts import PromptSet
from tmas.registration import with_defaults


def run_order(spec: GraphSpec) -> list[Any]:
    """The spec's nodes in the order its edges run them (loops back left out; nodes no edge
    orders keep their declared order).

    Example:
        >>> from tmas.graphs.bundled import load_bundled
        >>> [n.id for n in run_order(load_bundled("latent_mas"))][:3]
        ['start_iteration', 'planner', 'critic']
    """
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(node.id for node in spec.nodes)
    for edge in spec.edges:
        if edge.conditions:  # the loop back to the iteration's start
            continue
        for target in edge.targets:
            if edge.source in graph and target in graph:
                graph.add_edge(edge.source, target)
    declared = {node.id: index for index, node in enumerate(spec.nodes)}
    by_id = {node.id: node for node in spec.nodes}
    ordered = nx.lexicographical_topological_sort(graph, key=lambda n: declared[n])
    return [by_id[node_id] for node_id in ordered]


@dataclass(frozen=True)
class ChainAgent:
    """One upstream agent: its name and how it thinks."""

    agent: str
    latent_steps: int
    realign: bool
    keep_prompt: bool


@dataclass(frozen=True)
class LatentChain:
    """The upstream agents in order, the final agent, and the prompts of the topology."""

    upstream: tuple[ChainAgent, ...]
    final: str
    prompts: PromptSet

    @classmethod
    def from_spec(cls, spec: GraphSpec) -> LatentChain:
        """The chain of ``spec``; ValueError for a topology without exactly one final latent
        agent after its latent agents.

        Example:
            >>> from tmas.graphs.bundled import load_bundled
            >>> chain = LatentChain.from_spec(load_bundled("latent_mas"))
            >>> [a.agent for a in chain.upstream], chain.final
            (['planner', 'critic', 'refiner'], 'judger')
        """
        upstream, finals = [], []
        for node in run_order(spec):
            if node.type == "latent_agent":
                params = with_defaults(NODE_TYPES[node.type].factory, node.params)
                upstream.append(
                    ChainAgent(
                        params["agent"],
                        params["latent_steps"],
                        params["realign"],
                        params["keep_prompt"],
                    )
                )
            elif node.type == "latent_answer":
                finals.append(with_defaults(NODE_TYPES[node.type].factory, node.params)["agent"])
        if len(finals) != 1:
            raise ValueError(
                f"topology {spec.name!r} has {len(finals)} latent_answer nodes; training a final "
                "agent over a latent trace needs exactly one (a latent topology such as latent_mas)"
            )
        return cls(tuple(upstream), finals[0], PromptSet(spec.prompts))

    def example(self, tokenizer: Any, problem: str, target: str) -> dict[str, Any]:
        """One training row: the segments, the final agent's turn and the target's ids (which
        end in the end-of-turn token).

        Example (with ``tmas[train]``)::

            row = chain.example(tokenizer, "1+1?", "The answer is \\boxed{2}.")
        """
        segments = [
            make_segment(tokenizer, self.prompts, a.agent, problem, a.latent_steps, a.realign,
                         a.keep_prompt).record()
            for a in self.upstream
        ]  # fmt: skip
        target_ids = tokenizer(target, add_special_tokens=False)["input_ids"]
        return {
            "segments": segments,
            "final_ids": final_prompt_ids(tokenizer, self.prompts, self.final, problem),
            "target_ids": [*target_ids, int(tokenizer.eos_token_id)],
        }

    def describe(self) -> dict[str, Any]:
        """The chain as plain data (saved with the training and the adapter).

        Example:
            >>> from tmas.graphs.bundled import load_bundled
            >>> LatentChain.from_spec(load_bundled("latent_mas")).describe()["final"]
            'judger'
        """
        return {
            "upstream": [a.__dict__ for a in self.upstream],
            "final": self.final,
        }


def target_text(answer: str, solution: str | None) -> str:
    """What the final agent learns to write: the reference solution ending in its boxed
    answer, or, without one, the boxed answer alone.

    Example:
        >>> target_text("18", None)
        'The answer is \\\\boxed{18}.'
    """
    boxed = f"\\boxed{{{answer}}}"
    if solution and solution.strip():
        text = solution.strip()
        return text if boxed in text else f"{text}\nThe answer is {boxed}."
    return f"The answer is {boxed}."


def example_loss(model: Any, row: dict[str, Any]) -> Any:
    """Stage I then II for one row: the upstream agents build the trace on the base weights
    without gradients; the final agent (with the adapter) reads it, and the loss is the mean
    cross-entropy of the target tokens.

    Example (with ``tmas[train]``)::

        loss = example_loss(peft_model, chain.example(tokenizer, problem, target))
        loss.backward()
    """
    import torch

    trace = LatentTrace(model)
    with base_weights(model):
        for record in row["segments"]:
            trace.add(Segment.from_record(record))
    final_ids, target_ids = list(row["final_ids"]), list(row["target_ids"])
    ids = torch.tensor([final_ids + target_ids], device=trace.device)
    logits = trace.forward(input_ids=ids).logits[0]
    predicted = logits[len(final_ids) - 1 : -1].float()
    labels = torch.tensor(target_ids, device=predicted.device)
    return torch.nn.functional.cross_entropy(predicted, labels)
