"""Generated word problems that share traps a lesson can fix, each with its exact answer, its
trap and a worked reference solution, reproducible from a seed.

Seven traps, two problem shapes each, so that a lesson learnt on one problem applies to later
ones that look different. ``EASY_TRAPS`` (the default; Qwen2.5-Coder-1.5B solves the first
three almost always):

- ``half_together``: "half as many ... together" (the trap: answering the half alone);
- ``more_together``: "N more than ... together" (the trap: answering the larger amount alone);
- ``units``: an amount in one unit asked in another (meters to centimeters, hours and minutes
  to minutes; the trap: forgetting to convert, or converting one part only);
- ``inclusive``: counting from one number to another inclusive, or posts along a fence with
  both ends (the trap: off by one).

``HARD_TRAPS`` (the base model misses about half, measured on 11 of them), which share one
lesson, count the gaps, not the items:

- ``cuts``: minutes to cut a log into N pieces, or seconds for a clock to strike N times (the
  trap: N instead of N - 1 cuts or gaps);
- ``floors``: seconds to climb from one floor to another at a pace measured on other floors
  (the trap: floor numbers instead of flights);
- ``inclusive`` (as above);
- ``elapsed``: minutes from a morning time to an afternoon time (the trap: the hour across
  noon).

    >>> rows = generate(8, seed=1)
    >>> sorted(rows[0])
    ['answer', 'id', 'kind', 'problem', 'solution', 'trap']
    >>> [row["trap"] for row in rows[:4]]
    ['half_together', 'more_together', 'units', 'inclusive']
    >>> generate(8, seed=1) == rows
    True
    >>> [row["trap"] for row in generate(4, seed=1, traps=HARD_TRAPS)]
    ['cuts', 'floors', 'inclusive', 'elapsed']
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


def cuts(rng: random.Random, shape: int) -> Made:
    if shape == 0:
        pieces, minutes = rng.randint(3, 9), rng.randint(2, 9)
        text = (f"It takes {minutes} minutes to make one cut through a log. How many minutes "
                f"does it take to cut the log into {pieces} pieces?")  # fmt: skip
        answer = (pieces - 1) * minutes
        solution = (f"{pieces} pieces need {pieces} - 1 = {pieces - 1} cuts. "
                    f"{pieces - 1} x {minutes} = {answer}. " + boxed(answer))  # fmt: skip
    else:
        first, gap = rng.randint(3, 6), rng.randint(2, 4)
        second = rng.randint(first + 2, 12)
        text = (f"At {first} o'clock a clock strikes {first} times, taking {(first - 1) * gap} "
                f"seconds from the first strike to the last. At the same pace, how many seconds "
                f"does it take to strike {second} times at {second} o'clock?")  # fmt: skip
        answer = (second - 1) * gap
        solution = (f"{first} strikes have {first - 1} gaps of {(first - 1) * gap} / "
                    f"{first - 1} = {gap} seconds. {second} strikes have {second - 1} gaps: "
                    f"{second - 1} x {gap} = {answer}. " + boxed(answer))  # fmt: skip
    return text, answer, solution


def floors(rng: random.Random, shape: int) -> Made:
    name = rng.choice(NAMES)
    gap = rng.randint(8, 20)
    start = 1 if shape == 0 else rng.randint(2, 4)
    first = start + rng.randint(2, 5)
    second = first + rng.randint(2, 8)
    seconds = (first - start) * gap
    if shape == 0:
        text = (f"{name} walks up the stairs from floor {start} to floor {first} in {seconds} "
                f"seconds. At the same pace, how many seconds does it take {name} to walk from "
                f"floor {start} to floor {second}?")  # fmt: skip
    else:
        text = (f"An elevator goes from floor {start} to floor {first} in {seconds} seconds. "
                f"At the same speed, how many seconds does it take from floor {start} to floor "
                f"{second}?")  # fmt: skip
    answer = (second - start) * gap
    solution = (f"Floor {start} to {first} is {first - start} flights: {seconds} / "
                f"{first - start} = {gap} seconds each. Floor {start} to {second} is "
                f"{second - start} flights: {second - start} x {gap} = {answer}. "
                + boxed(answer))  # fmt: skip
    return text, answer, solution


def clock(hour: int, minute: int) -> str:
    """``clock(13, 5)`` is ``"1:05 PM"``."""
    return f"{(hour - 1) % 12 + 1}:{minute:02d} {'AM' if hour < 12 else 'PM'}"


NOON = 12 * 60  # minutes after midnight


def elapsed(rng: random.Random, shape: int) -> Made:
    """From a morning time (9:05 AM to 11:55 AM) to an afternoon time at least five minutes
    after noon and at most three hours after it: every problem crosses noon.

    >>> text, answer, _ = elapsed(random.Random(0), 0)
    >>> "AM and arrives at" in text and "PM the same day" in text, answer > 0
    (True, True)
    """
    name = rng.choice(NAMES)
    start_hour, start_minute = rng.randint(9, 11), rng.choice(range(5, 60, 5))
    to_noon = NOON - (start_hour * 60 + start_minute)
    length = rng.randint(max(70, to_noon + 5), to_noon + 180)
    end = start_hour * 60 + start_minute + length
    end_hour, end_minute = divmod(end, 60)
    begin, finish = clock(start_hour, start_minute), clock(end_hour, end_minute)
    if shape == 0:
        text = (f"A train leaves at {begin} and arrives at {finish} the same day. "
                "How many minutes is the trip?")  # fmt: skip
    else:
        text = (f"{name} starts baking at {begin} and finishes at {finish} the same day. "
                f"How many minutes does {name} bake?")  # fmt: skip
    begun = start_hour * 60 + start_minute
    solution = (f"In minutes after midnight: {start_hour} x 60 + {start_minute} = {begun} and "
                f"{end_hour} x 60 + {end_minute} = {end}. {end} - {begun} = {length}. "
                + boxed(length))  # fmt: skip
    return text, length, solution


TRAPS: dict[str, Callable[[random.Random, int], Made]] = {
    "half_together": half_together,
    "more_together": more_together,
    "units": units,
    "inclusive": inclusive,
    "cuts": cuts,
    "floors": floors,
    "elapsed": elapsed,
}
EASY_TRAPS = ("half_together", "more_together", "units", "inclusive")
HARD_TRAPS = ("cuts", "floors", "inclusive", "elapsed")


def generate(count: int, seed: int, traps: tuple[str, ...] | None = None) -> list[dict]:
    """``count`` problems cycling through ``traps`` (``EASY_TRAPS`` by default), each trap
    alternating its two shapes, as ``{"id", "problem", "answer", "kind", "trap", "solution"}``
    rows (the JSONL layout ``tmas eval`` and ``tmas train latent`` read)."""
    rng = random.Random(seed)
    names = list(traps or EASY_TRAPS)
    rows = []
    for index in range(count):
        trap = names[index % len(names)]
        shape = (index // len(names)) % 2
        text, answer, solution = TRAPS[trap](rng, shape)
        rows.append({"id": f"t{seed}-{index}", "problem": text, "answer": str(answer),
                     "kind": f"{trap}/{shape}", "trap": trap, "solution": solution})  # fmt: skip
    return rows
