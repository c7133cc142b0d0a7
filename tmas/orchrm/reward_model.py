"""The plan reward model at test time: a scalar score for (problem, plan), read from a trained
LoRA adapter with a score head (``tmas orchrm train``).

The adapter folder holds, beside the PEFT files, ``orchrm.json``: the base model, the input
format and the plans it was trained on (by digest), so that plans it never saw are refused
unless the caller asks for them (an orchestrator's new plans).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tmas.llm.model_files import ModelFileError

RM_RECORD = "orchrm.json"
INPUT_FORMAT = 1


class RewardModelError(ValueError):
    """A reward model that cannot be used for these plans, or cannot be read."""


def render_input(problem: str, plan: str) -> str:
    """The text the reward model scores: the problem, then the plan's canonical text.

    Example:
        >>> print(render_input("What is 2 + 3?", "topology: majority_vote\\n"))
        Problem:
        What is 2 + 3?
        <BLANKLINE>
        Plan:
        topology: majority_vote
        <BLANKLINE>
    """
    return f"Problem:\n{problem.strip()}\n\nPlan:\n{plan}"


ELISION = "\n[...]\n"
MIN_PROBLEM_TOKENS = 16  # of the problem a shortened input keeps at least


def _input_length(tokenizer: Any, problem: str, plan: str) -> int:
    """Tokens of the rendered input with its end token (what training and scoring read)."""
    return len(tokenizer(render_input(problem, plan))["input_ids"]) + 1


def fitted_problem(tokenizer: Any, problem: str, plans: list[str], max_length: int) -> str:
    """The problem as the reward model reads it beside each of ``plans`` in ``max_length``
    tokens: whole when it fits with the longest plan, else its start and its end with the
    middle left out (``[...]``). A plan is never cut (it is the part that differs between
    candidates); RewardModelError when the longest plan leaves no room for the problem. The
    same rule shapes training pairs and scored candidates.

    Example::

        fitted_problem(tokenizer, long_problem, [plan.text for plan in plans], 1024)
    """
    longest = max(plans, key=lambda plan: _input_length(tokenizer, "", plan))
    if _input_length(tokenizer, problem, longest) <= max_length:
        return problem
    ids = tokenizer(problem.strip(), add_special_tokens=False)["input_ids"]
    room = max_length - _input_length(tokenizer, ELISION, longest)
    while room >= MIN_PROBLEM_TOKENS:
        tail = room // 2
        shortened = (tokenizer.decode(ids[: room - tail]).rstrip() + ELISION
                     + tokenizer.decode(ids[len(ids) - tail :]).lstrip())  # fmt: skip
        if _input_length(tokenizer, shortened, longest) <= max_length:
            return shortened
        room -= 4  # decoding and encoding again can merge or split a few tokens
    plan_tokens = _input_length(tokenizer, "", longest)
    raise RewardModelError(
        f"a plan of {plan_tokens} tokens leaves no room for the problem in {max_length} tokens; "
        "raise --max-length (plans are never cut)"
    )


def read_record(folder: Path) -> dict[str, Any]:
    """The ``orchrm.json`` of a reward model folder (the adapter, or the training folder
    holding it as ``adapter/``); RewardModelError when there is none.

    Example:
        >>> read_record(Path("/no/such/rm"))
        Traceback (most recent call last):
        ...
        tmas.orchrm.reward_model.RewardModelError: /no/such/rm is not a plan reward model ...
    """
    for candidate in (folder, folder / "adapter"):
        path = candidate / RM_RECORD
        if path.is_file():
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise RewardModelError(f"{path} is damaged ({exc})") from None
            if record.get("input_format") != INPUT_FORMAT:
                raise RewardModelError(f"{path}: written by another version of tmas orchrm")
            return {**record, "folder": str(candidate.resolve())}
    raise RewardModelError(
        f"{folder} is not a plan reward model (no {RM_RECORD}; train one with tmas orchrm train)"
    )


def unseen_plans(record: dict[str, Any], digests: dict[str, str]) -> list[str]:
    """The names of the plans (digest -> name) the reward model was not trained on.

    Example:
        >>> unseen_plans({"plans": {"aa": "mv"}}, {"aa": "mv", "bb": "tmas"})
        ['tmas']
    """
    known = record.get("plans") or {}
    return [name for digest, name in digests.items() if digest not in known]


def check_plan_space(record: dict[str, Any], digests: dict[str, str]) -> None:
    """Refuse plans the reward model never saw in training: it was trained for another plan
    space (its scores of them would mean nothing yet)."""
    unseen = unseen_plans(record, digests)
    if unseen:
        trained = ", ".join(sorted(set((record.get("plans") or {}).values()))[:6]) or "none"
        raise RewardModelError(
            f"the reward model at {record['folder']} was trained on another plan space: "
            f"{len(unseen)} of these plans were never in its pairs ({', '.join(unseen[:4])}); "
            f"it knows {trained}. Train it on pairs of these plans, or pass "
            "--allow-unseen-plans to score them anyway"
        )


@dataclass
class PlanRewardModel:
    """A loaded reward model: ``score(problem, plans)`` gives one number per plan text."""

    model: Any
    tokenizer: Any
    record: dict[str, Any]
    max_length: int = 1024
    batch_size: int = 4
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fits(self, plan: str) -> bool:
        """Whether ``plan`` leaves room for a problem in ``max_length`` tokens (plans are never
        cut: one that does not fit cannot be scored)."""
        room = self.max_length - _input_length(self.tokenizer, ELISION, plan)
        return room >= MIN_PROBLEM_TOKENS

    def score(self, problem: str, plans: list[str]) -> list[float]:
        """One score per plan text for ``problem`` (higher: more likely to solve it)."""
        import torch

        eos = self.tokenizer.eos_token or ""  # training saw each text end in it
        shown = fitted_problem(self.tokenizer, problem, plans, self.max_length)
        texts = [render_input(shown, plan) + eos for plan in plans]
        scores: list[float] = []
        with self.lock, torch.no_grad():
            for start in range(0, len(texts), self.batch_size):
                batch = self.tokenizer(
                    texts[start : start + self.batch_size],
                    padding=True,
                    return_tensors="pt",
                ).to(self.model.device)
                logits = self.model(**batch).logits
                scores += [float(v) for v in logits[:, 0].float().cpu()]
        return scores


_loaded: dict[tuple[str, str], PlanRewardModel] = {}
_loading = threading.Lock()


def load_reward_model(folder: Path | str, device: str | None = None) -> PlanRewardModel:
    """The reward model in ``folder`` (the adapter, or the training folder), loaded once per
    process; RewardModelError/ModelFileError when it cannot be.

    Example (with ``tmas[train]``)::

        scores = load_reward_model("rm").score("What is 2 + 3?", [plan.text for plan in plans])
    """
    from tmas.llm.checkpoints import checkpoint_for
    from tmas.llm.hf.model_loading import (
        INSTALL_HINT,
        AdapterMismatchError,
        check_adapter,
        first_line,
        load_base,
        model_shape,
        pick_device,
    )

    record = read_record(Path(folder).expanduser())
    where = pick_device(device)
    key = (record["folder"], where)
    with _loading:
        if key in _loaded:
            return _loaded[key]
        checkpoint = checkpoint_for(record["base_model"])
        base, tokenizer = load_base(checkpoint, record["base_model"], where, score_head=True)
        check_adapter(Path(record["folder"]), model_shape(base.config), record["base_model"])
        try:
            from peft import PeftModel
        except ImportError as exc:
            raise ModelFileError(f"the reward model needs peft: {INSTALL_HINT}") from exc
        try:
            model = PeftModel.from_pretrained(base, record["folder"])
        except (RuntimeError, ValueError, KeyError) as exc:
            raise AdapterMismatchError(
                f"reward model {record['folder']} does not load: {first_line(exc)}"
            ) from exc
        model.to(where).eval()
        loaded = PlanRewardModel(model, tokenizer, record, int(record.get("max_length", 1024)))
        _loaded[key] = loaded
        return loaded
