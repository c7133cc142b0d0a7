"""Editing a paused run's banks: the JSON a person edits, checked and completed before it goes
back into the run's state."""

from __future__ import annotations

import json
from typing import Any

BANKS = ("experience_bank", "guideline_bank")
EXPERIENCE_KINDS = ("conclusion", "pitfall", "note", "strategy")  # strategy: a memory lesson
KEPT_AS_THEY_ARE = ("origin", "provenance")  # where a remembered lesson comes from


class BankEditError(ValueError):
    """The edited banks cannot be used."""


def banks_as_json(state: dict[str, Any]) -> str:
    """The banks of ``state`` as indented JSON for a person to edit.

    Example:
        >>> print(banks_as_json({"experience_bank": [], "guideline_bank": []}))
        {
          "experience_bank": [],
          "guideline_bank": []
        }
    """
    return json.dumps({name: state.get(name, []) for name in BANKS}, indent=2)


def _item(raw: Any, bank: str, position: int, iteration: int) -> dict[str, Any]:
    where = f"{bank}[{position}]"
    if not isinstance(raw, dict):
        raise BankEditError(f"{where} must be an object with a text")
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise BankEditError(f"{where} needs a non-empty text")
    prefix = "e" if bank == "experience_bank" else "g"
    try:
        item = {
            "id": str(raw.get("id") or f"{prefix}-edit-{iteration}-{position}"),
            "text": text.strip(),
            "iteration": int(raw.get("iteration", iteration)),
            "source_index": int(raw.get("source_index", -1)),
            "hits": int(raw.get("hits", 0)),
        }
    except (TypeError, ValueError):
        raise BankEditError(f"{where}: iteration, source_index and hits are numbers") from None
    if bank == "experience_bank":
        kind = raw.get("kind", "note")
        if kind not in EXPERIENCE_KINDS:
            raise BankEditError(f"{where}: kind must be one of {', '.join(EXPERIENCE_KINDS)}")
        item["kind"] = kind
    item.update({key: raw[key] for key in KEPT_AS_THEY_ARE if key in raw})
    return item


def banks_from_json(text: str, iteration: int) -> dict[str, list[dict[str, Any]]]:
    """The banks a person wrote, completed (missing ids, iterations, hits get defaults);
    BankEditError says what is wrong.

    Example:
        >>> banks_from_json('{"experience_bank": [{"text": "x = 4"}], "guideline_bank": []}',
        ...                 2)["experience_bank"][0]["id"]
        'e-edit-2-0'
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BankEditError(f"not valid JSON: {exc}") from None
    if not isinstance(data, dict) or set(data) - set(BANKS):
        raise BankEditError(f"expected an object with the keys {' and '.join(BANKS)}")
    banks = {}
    for bank in BANKS:
        items = data.get(bank, [])
        if not isinstance(items, list):
            raise BankEditError(f"{bank} must be a list")
        banks[bank] = [_item(raw, bank, i, iteration) for i, raw in enumerate(items)]
        ids = [item["id"] for item in banks[bank]]
        if len(set(ids)) != len(ids):
            raise BankEditError(f"{bank} has the same id twice")
    return banks
