"""Generated word problems that share traps a lesson can fix, each with its exact answer, its
trap and a worked reference solution, reproducible from a seed.

Four traps, two problem shapes each, so that a lesson learnt on one problem applies to later
ones that look different:

- ``half_together``: "half as many ... together" (the trap: answering the half alone);
- ``more_together``: "N more than ... together" (the trap: answering the larger amount alone);
- ``units``: an amount in one unit asked in another (meters to centimeters, hours and minutes
  to minutes; the trap: forgetting to convert, or converting one part only);
- ``inclusive``: counting from one number to another inclusive, or posts along a fence with
  both ends (the trap: off by one).

    >>> rows = generate(8, seed=1)
    >>> sorted(rows[0])
    ['answer', 'id', 'kind', 'problem', 'solution', 'trap']
    >>> [row["trap"] for row in rows[:4]]
    ['half_together', 'more_together', 'units', 'inclusive']
    >>> generate(8, seed=1) == rows
    True
"""

from __future__ import annotations

import random
from collections.abc import Callable

from word_problems import ITEMS, NAMES, Problem, boxed

Made = Problem  # problem, answer, worked solution


def half_together(rng: random.Random, shape: int) -> Made:
    a = 2 * rng.randint(3, 20)
    first, second = rng.sample(NAMES, 2)
    item = rng.choice(ITEMS)
    if shape == 0:
        text = (f"{first} has {a} {item}. {second} has half as many {item} as {first}. "
                f"How many {item} do they have together?")  # fmt: skip
    else:
        text = (f"A shop sold {a} {item} on Monday and half as many on Tuesday. "
                f"How many {item} did it sell on the two days together?")  # fmt: skip
    solution = (f"Half of {a} is {a} / 2 = {a // 2}. Together: {a} + {a // 2} = {a + a // 2}. "
                + boxed(a + a // 2))  # fmt: skip
    return text, a + a // 2, solution


def more_together(rng: random.Random, shape: int) -> Made:
    a, n = rng.randint(4, 30), rng.randint(2, 12)
    first, second = rng.sample(NAMES, 2)
    item = rng.choice(ITEMS)
    if shape == 0:
        text = (f"{first} has {a} {item}. {second} has {n} more {item} than {first}. "
                f"How many {item} do they have together?")  # fmt: skip
    else:
        text = (f"A class collected {a} {item} in the morning and {n} more than that in the "
                f"afternoon. How many {item} did it collect in all?")  # fmt: skip
    b = a + n
    solution = (f"The second amount is {a} + {n} = {b}. Together: {a} + {b} = {a + b}. "
                + boxed(a + b))  # fmt: skip
    return text, a + b, solution


def units(rng: random.Random, shape: int) -> Made:
    name = rng.choice(NAMES)
    if shape == 0:
        meters, extra = rng.randint(2, 9), rng.randint(5, 95)
        text = (f"{name} has a rope {meters} meters and {extra} centimeters long. "
                "How long is the rope in centimeters?")  # fmt: skip
        answer = meters * 100 + extra
        solution = (f"{meters} meters is {meters} x 100 = {meters * 100} centimeters. "
                    f"{meters * 100} + {extra} = {answer}. " + boxed(answer))  # fmt: skip
    else:
        hours, minutes = rng.randint(2, 5), rng.randint(5, 55)
        text = (f"{name} reads for {hours} hours and {minutes} minutes. "
                "How many minutes does {name} read in all?").replace("{name}", name)  # fmt: skip
        answer = hours * 60 + minutes
        solution = (f"{hours} hours is {hours} x 60 = {hours * 60} minutes. "
                    f"{hours * 60} + {minutes} = {answer}. " + boxed(answer))  # fmt: skip
    return text, answer, solution


def inclusive(rng: random.Random, shape: int) -> Made:
    name = rng.choice(NAMES)
    if shape == 0:
        start = rng.randint(5, 40)
        end = start + rng.randint(6, 30)
        text = (f"{name} reads a book from page {start} to page {end}, both pages included. "
                f"How many pages does {name} read?")  # fmt: skip
        answer = end - start + 1
        solution = f"Counting both ends: {end} - {start} + 1 = {answer}. " + boxed(answer)
    else:
        gap = rng.choice((2, 3, 4, 5))
        length = gap * rng.randint(3, 12)
        text = (f"A straight fence is {length} meters long, with a post every {gap} meters, "
                "including a post at each end. How many posts are there?")  # fmt: skip
        answer = length // gap + 1
        solution = (f"{length} / {gap} = {length // gap} gaps, and one more post than gaps: "
                    f"{length // gap} + 1 = {answer}. " + boxed(answer))  # fmt: skip
    return text, answer, solution


TRAPS: dict[str, Callable[[random.Random, int], Made]] = {
    "half_together": half_together,
    "more_together": more_together,
    "units": units,
    "inclusive": inclusive,
}


def generate(count: int, seed: int, traps: tuple[str, ...] | None = None) -> list[dict]:
    """``count`` problems cycling through ``traps`` (all by default), each trap alternating
    its two shapes, as ``{"id", "problem", "answer", "kind", "trap", "solution"}`` rows (the
    JSONL layout ``tmas eval`` and ``tmas train latent`` read)."""
    rng = random.Random(seed)
    names = list(traps or TRAPS)
    rows = []
    for index in range(count):
        trap = names[index % len(names)]
        shape = (index // len(names)) % 2
        text, answer, solution = TRAPS[trap](rng, shape)
        rows.append({"id": f"t{seed}-{index}", "problem": text, "answer": str(answer),
                     "kind": f"{trap}/{shape}", "trap": trap, "solution": solution})  # fmt: skip
    return rows
