"""Reward spread inside GRPO groups. A group whose completions all scored the same has zero
advantage: it teaches nothing and only adds the KL term and its tokens to the loss's
denominator. :func:`zero_spread_groups` finds such groups; :func:`spread_filtering_trainer`
makes TRL's GRPOTrainer leave them out of the loss (DAPO's dynamic sampling, without the
resampling) and count them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def zero_spread_groups(totals: Sequence[float | None], group_size: int) -> list[int]:
    """The indices of the groups (``group_size`` consecutive completions of one prompt) whose
    scored totals are all equal; completions left out (None) do not count, and a group with
    fewer than two scored completions has no spread either.

    Example:
        >>> zero_spread_groups([1.0, 1.0, 0.0, 1.0, None, 0.5], 2)
        [0, 2]
    """
    found = []
    for start in range(0, len(totals), group_size):
        scored = [t for t in totals[start : start + group_size] if t is not None]
        if len(scored) < 2 or max(scored) - min(scored) < 1e-9:
            found.append(start // group_size)
    return found


def spread_filtering_trainer(
    totals_of_last_batch: Callable[[], list[float | None]], drop: bool
) -> type:
    """A GRPOTrainer subclass that logs ``spread/zero_spread_groups`` each step and, with
    ``drop``, masks those groups' completions out of the loss. ``totals_of_last_batch`` gives the
    totals the reward functions just computed, in batch order.

    Example (with ``tmas[train]``)::

        Trainer = spread_filtering_trainer(rewards.last_totals, drop=True)
        trainer = Trainer(model=..., reward_funcs=..., args=...)
    """
    from trl import GRPOTrainer

    class SpreadFilteringGRPOTrainer(GRPOTrainer):
        dropped_groups = 0

        def _generate_and_score_completions(self, inputs: Any) -> dict[str, Any]:
            output = super()._generate_and_score_completions(inputs)
            mode = "train" if self.model.training else "eval"
            groups = zero_spread_groups(totals_of_last_batch(), self.num_generations)
            self._metrics[mode]["spread/zero_spread_groups"].append(float(len(groups)))
            if drop and groups and mode == "train":
                mask = output["completion_mask"]
                for group in groups:
                    mask[group * self.num_generations : (group + 1) * self.num_generations] = 0
                output["num_items_in_batch"] = mask.sum()
                self.dropped_groups += len(groups)
            return output

    return SpreadFilteringGRPOTrainer
