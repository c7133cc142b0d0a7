"""The grading worker process: imports math-verify, says ``ready``, then reads
``{"answer", "gold"}`` JSON lines on stdin and writes ``true``/``false`` lines on stdout. Run
by ``tmas.answers.grading.BoundedGrader``."""

from __future__ import annotations

import json
import logging
import sys


def equivalent(answer: str, gold: str) -> bool:
    """math-verify equivalence of two short answers (no time bound here: the caller has one).

    Example:
        >>> equivalent("\\\\frac{1}{2}", "0.5")
        True
    """
    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    gold_parsed = parse(f"${gold}$", parsing_timeout=None)
    answer_parsed = parse(f"${answer}$", parsing_timeout=None)
    if not gold_parsed or not answer_parsed:
        return False
    return bool(verify(gold_parsed, answer_parsed, timeout_seconds=None))


def main() -> None:
    import math_verify  # noqa: F401 - loaded before the first timed check

    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        try:
            request = json.loads(line)
            result = equivalent(str(request["answer"]), str(request["gold"]))
        except Exception:  # noqa: BLE001 - a grader never crashes
            result = False
        sys.stdout.write("true\n" if result else "false\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
