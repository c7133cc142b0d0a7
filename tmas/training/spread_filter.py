"""Rows with reward spread: sample k completions of each training row under the exact
training prompt (the chat template TRL renders), budget and temperature, score them for
correctness, and keep the rows whose pass rate lies strictly between 0 and 1 (DAPO's dynamic
sampling, done once before training). Rows the policy always or never solves give GRPO groups
without spread, which teach nothing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tmas.training.rewards import HybridReward, Sample


class FilterSettings(BaseModel):
    """How ``tmas train filter`` samples: the policy (model and optional adapter), k completions
    per row, the training budget and temperature.

    Example:
        >>> FilterSettings(samples=8).temperature
        1.0
    """

    model_config = ConfigDict(extra="forbid")

    model: str = "smollm2"
    adapter: str | None = None
    samples: int = Field(default=8, ge=2)
    max_completion_length: int = Field(default=128, ge=1)
    temperature: float = Field(default=1.0, gt=0)
    rows_per_batch: int = Field(default=4, ge=1)
    seed: int = 0
    device: str | None = None


@dataclass
class SpreadReport:
    """Each row's number of correct completions out of ``samples``, and the rows kept."""

    samples: int
    correct: list[int] = field(default_factory=list)
    kept: list[dict[str, Any]] = field(default_factory=list)

    @property
    def pass_rate(self) -> float:
        """The mean pass rate over all rows (the policy's Pass@1 on them).

        Example:
            >>> SpreadReport(4, [0, 2, 4]).pass_rate
            0.5
        """
        return sum(self.correct) / (self.samples * len(self.correct)) if self.correct else 0.0

    def summary(self) -> dict[str, Any]:
        """Rows in, rows kept, the mean pass rate and the histogram of correct counts.

        Example:
            >>> SpreadReport(2, [0, 1, 1, 2]).summary()["histogram"]
            {'0': 1, '1': 2, '2': 1}
        """
        counts = Counter(self.correct)
        return {
            "rows": len(self.correct),
            "kept": len(self.kept),
            "never_solved": counts[0],
            "always_solved": counts[self.samples],
            "pass_rate": round(self.pass_rate, 4),
            "samples": self.samples,
            "histogram": {str(k): counts[k] for k in range(self.samples + 1)},
        }


def spread_rows(
    rows: list[dict[str, Any]],
    sample: Callable[[list[list[dict[str, str]]]], list[list[str]]],
    samples: int,
    rows_per_batch: int = 4,
    progress: Callable[[int, int], None] | None = None,
) -> SpreadReport:
    """Score ``samples`` completions of each row (``sample`` maps a batch of chat prompts to
    their completions) and keep rows with some but not all correct; each kept row's
    ``extra_info`` records its ``pass_rate``. ``progress`` hears (rows done, rows) after each
    batch.

    Example:
        >>> rows = [{"prompt": [{"role": "user", "content": q}],
        ...          "reward_model": {"ground_truth": a}} for q, a in (("1+1", "2"), ("2+2", "4"))]
        >>> fake = lambda prompts: [["\\\\boxed{2}", "\\\\boxed{3}"] for _ in prompts]
        >>> report = spread_rows(rows, fake, samples=2)
        >>> report.correct, [r["extra_info"]["pass_rate"] for r in report.kept]
        ([1, 0], [0.5])
    """
    reward = HybridReward()
    report = SpreadReport(samples)
    for start in range(0, len(rows), rows_per_batch):
        batch = rows[start : start + rows_per_batch]
        completions = sample([list(row["prompt"]) for row in batch])
        for row, texts in zip(batch, completions, strict=True):
            truth = Sample.from_row(row)
            correct = int(sum(reward.correctness(truth, text) for text in texts))
            report.correct.append(correct)
            if 0 < correct < samples:
                extra = dict(row.get("extra_info") or {})
                extra["pass_rate"] = correct / samples
                report.kept.append({**row, "extra_info": extra})
        if progress is not None:
            progress(len(report.correct), len(rows))
    return report


def policy_sampler(settings: FilterSettings) -> Callable[[list[list[dict]]], list[list[str]]]:
    """A sampler on the policy the settings name: ``samples`` completions per prompt at the
    training temperature and budget (see :func:`complete_chats`)."""
    import torch

    from tmas.llm.hf.model_loading import load_model

    loaded = load_model(settings.model, settings.adapter, settings.device)
    torch.manual_seed(settings.seed)  # once: each batch then draws on from there
    return lambda prompts: complete_chats(
        loaded, prompts, settings.samples, settings.temperature, settings.max_completion_length
    )


def complete_chats(
    loaded: Any,
    prompts: list[list[dict]],
    samples: int,
    temperature: float,
    max_tokens: int,
) -> list[list[str]]:
    """``samples`` completions of each chat prompt on a loaded hf model (``load_model``),
    rendered as TRL renders them (the chat template with the generation prompt, left padding)
    and sampled with TRL's defaults (top_p 1, top_k off); ``temperature`` 0 decodes greedily.

    Example (with ``tmas[train]``)::

        complete_chats(load_model("smollm2"), [[{"role": "user", "content": "2+2?"}]], 1, 0, 16)
    """
    import torch

    from tmas.llm.hf.batching import left_padded
    from tmas.llm.hf.decoding import chat_prompt_ids

    tokenizer, model = loaded.tokenizer, loaded.model
    sampling = {"do_sample": True, "temperature": temperature, "top_p": 1.0, "top_k": 0}
    with loaded.lock, torch.no_grad():
        ids, masks = left_padded([chat_prompt_ids(tokenizer, p) for p in prompts],
                                 tokenizer.pad_token_id)  # fmt: skip
        output = model.generate(
            input_ids=torch.tensor(ids, device=loaded.device),
            attention_mask=torch.tensor(masks, device=loaded.device),
            **(sampling if temperature > 0 else {"do_sample": False}),
            max_new_tokens=max_tokens,
            num_return_sequences=samples,
            pad_token_id=tokenizer.pad_token_id,
        )
    decoded = tokenizer.batch_decode(output[:, len(ids[0]) :], skip_special_tokens=True)
    return [decoded[i * samples : (i + 1) * samples] for i in range(len(prompts))]
