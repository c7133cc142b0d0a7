"""Generated arithmetic word problems: one- and two-step problems (add, subtract, multiply,
"half as many", "N more than") with one-digit amounts, each with its exact integer answer, its
kind and a worked reference solution, reproducible from a seed. Used by the learning
benchmarks, which need problems a small model solves some of the time (neither never nor
always) and as many of them as an interval needs.

    >>> problems = generate(3, seed=1)
    >>> [sorted(p) for p in problems][0]
    ['answer', 'id', 'kind', 'problem', 'solution']
    >>> generate(3, seed=1) == problems
    True
"""

from __future__ import annotations

import random
from collections.abc import Callable

NAMES = ("Tom", "Ana", "Li", "Sara", "Omar", "Maya", "Ben", "Zoe")
ITEMS = ("apples", "pencils", "stickers", "marbles", "books", "coins", "cards", "shells")
CONTAINERS = ("boxes", "bags", "packs", "jars")

Problem = tuple[str, int, str]  # text, answer, worked solution


def boxed(answer: int) -> str:
    """The closing sentence of a worked solution.

    >>> boxed(7)
    'The answer is \\\\boxed{7}.'
    """
    return f"The answer is \\boxed{{{answer}}}."


def _people(rng: random.Random) -> tuple[str, str, str]:
    first, second = rng.sample(NAMES, 2)
    return first, second, rng.choice(ITEMS)


def add(rng: random.Random) -> Problem:
    a, b = rng.randint(2, 9), rng.randint(2, 9)
    name, _, item = _people(rng)
    text = f"{name} has {a} {item}. {name} buys {b} more. How many {item} does {name} have now?"
    return text, a + b, f"{a} + {b} = {a + b}. " + boxed(a + b)


def subtract(rng: random.Random) -> Problem:
    b = rng.randint(2, 9)
    a = b + rng.randint(1, 9)
    name, other, item = _people(rng)
    text = (
        f"{name} has {a} {item} and gives {b} of them to {other}. "
        f"How many {item} does {name} have left?"
    )
    return text, a - b, f"{a} - {b} = {a - b}. " + boxed(a - b)


def multiply(rng: random.Random) -> Problem:
    a, b = rng.randint(2, 5), rng.randint(2, 5)
    name, _, item = _people(rng)
    box = rng.choice(CONTAINERS)
    text = f"{name} has {a} {box} with {b} {item} in each. How many {item} does {name} have?"
    return text, a * b, f"{a} x {b} = {a * b}. " + boxed(a * b)


def half(rng: random.Random) -> Problem:
    a = 2 * rng.randint(2, 9)
    name, other, item = _people(rng)
    text = (
        f"{name} has {a} {item}. {other} has half as many {item} as {name}. "
        f"How many {item} does {other} have?"
    )
    return text, a // 2, f"Half of {a} is {a} / 2 = {a // 2}. " + boxed(a // 2)


def more_than(rng: random.Random) -> Problem:
    a, n = rng.randint(2, 9), rng.randint(2, 9)
    name, other, item = _people(rng)
    text = (
        f"{name} has {a} {item}. {other} has {n} more {item} than {name}. "
        f"How many {item} does {other} have?"
    )
    return text, a + n, f"{a} + {n} = {a + n}. " + boxed(a + n)


def more_than_total(rng: random.Random) -> Problem:
    a, n = rng.randint(2, 9), rng.randint(2, 5)
    name, other, item = _people(rng)
    text = (
        f"{name} has {a} {item}. {other} has {n} more {item} than {name}. "
        f"How many {item} do they have together?"
    )
    solution = f"The second has {a} + {n} = {a + n}. Together: {a} + {a + n} = {2 * a + n}. "
    return text, a + (a + n), solution + boxed(2 * a + n)


def half_total(rng: random.Random) -> Problem:
    a = 2 * rng.randint(2, 6)
    name, other, item = _people(rng)
    text = (
        f"{name} has {a} {item}. {other} has half as many {item} as {name}. "
        f"How many {item} do they have together?"
    )
    solution = f"Half of {a} is {a // 2}. Together: {a} + {a // 2} = {a + a // 2}. "
    return text, a + a // 2, solution + boxed(a + a // 2)


def packs_minus(rng: random.Random) -> Problem:
    k, m = rng.randint(2, 5), rng.randint(2, 8)
    g = rng.randint(1, k * m - 1)
    name, other, item = _people(rng)
    box = rng.choice(CONTAINERS)
    text = (
        f"{name} buys {k} {box} of {item} with {m} {item} in each, then gives {g} {item} to "
        f"{other}. How many {item} does {name} have left?"
    )
    solution = f"{k} x {m} = {k * m}, and {k * m} - {g} = {k * m - g}. "
    return text, k * m - g, solution + boxed(k * m - g)


KINDS: dict[str, Callable[[random.Random], Problem]] = {
    "add": add,
    "subtract": subtract,
    "multiply": multiply,
    "half": half,
    "more_than": more_than,
    "more_than_total": more_than_total,
    "half_total": half_total,
    "packs_minus": packs_minus,
}


ONE_STEP = ("add", "subtract", "multiply", "half", "more_than")


def generate(count: int, seed: int, kinds: tuple[str, ...] | None = None) -> list[dict]:
    """``count`` problems cycling through ``kinds`` (all by default) in a seeded order, as
    ``{"id", "problem", "answer", "kind", "solution"}`` rows (the JSONL layout ``tmas eval``
    and ``tmas train latent`` read)."""
    rng = random.Random(seed)
    names = list(kinds or KINDS)
    rows = []
    for index in range(count):
        kind = names[index % len(names)]
        text, answer, solution = KINDS[kind](rng)
        row = {"id": f"s{seed}-{index}", "problem": text, "answer": str(answer), "kind": kind,
               "solution": solution}  # fmt: skip
        rows.append(row)
    return rows
