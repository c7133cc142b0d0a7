"""The agents of a chain topology, read from its spec, and the training example of one problem:
what the upstream agents pass on (stage I) and the final agent's turn with its target (stage II).

Upstream agents pass latents (``latent_mas``: segments of a shared KV trace) or text
(``text_mas``: notes the final agent reads in its prompt). Training reads the chain from the
same spec a run compiles, so the adapter learns to read exactly what the topology builds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tmas.graphs.spec import GraphSpec
from tmas.llm.hf.latent_trace import LatentTrace, Segment, base_weights
from tmas.nodes.agents.latent_agents import final_prompt_ids, make_segment
from tmas.nodes.parameters import with_defaults
from tmas.nodes.prompts import PromptSet
from tmas.registration import registry


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
    """One upstream agent: its name and how it thinks (latent steps, or text of at most
    ``max_tokens`` tokens when it ``writes_text``)."""

    agent: str
    latent_steps: int = 0
    realign: bool = True
    keep_prompt: bool = True
    writes_text: bool = False
    max_tokens: int = 256


@dataclass(frozen=True)
class LatentChain:
    """The upstream agents in order, the final agent, and the prompts of the topology."""

    upstream: tuple[ChainAgent, ...]
    final: str
    prompts: PromptSet

    @property
    def passes_text(self) -> bool:
        """Whether the upstream agents write notes (text) rather than latents."""
        return any(agent.writes_text for agent in self.upstream)

    @classmethod
    def from_spec(cls, spec: GraphSpec) -> LatentChain:
        """The chain of ``spec``; ValueError for a topology without exactly one final agent
        (``latent_answer`` or ``text_answer``) after its upstream agents, or with agents that
        pass latents and agents that pass text in one chain.

        Example:
            >>> from tmas.graphs.bundled import load_bundled
            >>> chain = LatentChain.from_spec(load_bundled("latent_mas"))
            >>> [a.agent for a in chain.upstream], chain.final
            (['planner', 'critic', 'refiner'], 'judger')
            >>> LatentChain.from_spec(load_bundled("text_mas")).passes_text
            True
        """
        upstream, finals = [], []
        for node in run_order(spec):
            if node.type == "text_agent":
                agent = with_defaults(registry().nodes[node.type].factory, node.params)["agent"]
                declared = spec.roles.get(node.role or agent)
                budget = declared.max_tokens if declared is not None else 256
                upstream.append(ChainAgent(agent, writes_text=True, max_tokens=budget))
            elif node.type == "latent_agent":
                params = with_defaults(registry().nodes[node.type].factory, node.params)
                upstream.append(
                    ChainAgent(
                        params["agent"],
                        params["latent_steps"],
                        params["realign"],
                        params["keep_prompt"],
                    )
                )
            elif node.type in ("latent_answer", "text_answer"):
                factory = registry().nodes[node.type].factory
                finals.append(with_defaults(factory, node.params)["agent"])
        if len(finals) != 1:
            raise ValueError(
                f"topology {spec.name!r} has {len(finals)} final agents (latent_answer or "
                "text_answer nodes); training a final agent needs exactly one (a chain topology "
                "such as latent_mas or text_mas)"
            )
        if len({agent.writes_text for agent in upstream}) > 1:
            raise ValueError(f"topology {spec.name!r} mixes agents passing latents and text")
        return cls(tuple(upstream), finals[0], PromptSet(spec.prompts))

    def example(self, tokenizer: Any, problem: str, target: str, notes: str = "") -> dict:
        """One training row: the latent agents' segments, the final agent's turn (with the
        text agents' ``notes``) and the target's ids (which end in the end-of-turn token).

        Example (with ``tmas[train]``)::

            row = chain.example(tokenizer, "1+1?", "The answer is \\boxed{2}.")
        """
        segments = [
            make_segment(tokenizer, self.prompts, a.agent, problem, a.latent_steps, a.realign,
                         a.keep_prompt).record()
            for a in self.upstream if not a.writes_text
        ]  # fmt: skip
        target_ids = tokenizer(target, add_special_tokens=False)["input_ids"]
        return {
            "segments": segments,
            "final_ids": final_prompt_ids(tokenizer, self.prompts, self.final, problem, notes),
            "target_ids": [*target_ids, int(tokenizer.eos_token_id)],
        }

    def describe(self) -> dict[str, Any]:
        """The chain as plain data (saved with the training and the adapter).

        Example:
            >>> from tmas.graphs.bundled import load_bundled
            >>> LatentChain.from_spec(load_bundled("latent_mas")).describe()["final"]
            'judger'
        """

        def shown(agent: ChainAgent) -> dict[str, Any]:
            if agent.writes_text:
                return {"agent": agent.agent, "writes_text": True, "max_tokens": agent.max_tokens}
            return {"agent": agent.agent, "latent_steps": agent.latent_steps,
                    "realign": agent.realign, "keep_prompt": agent.keep_prompt}  # fmt: skip

        return {"upstream": [shown(a) for a in self.upstream], "final": self.final}


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
