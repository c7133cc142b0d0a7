"""Grading answers against a gold answer with math-verify, bounded in time.

math-verify's own timeouts use ``signal.alarm`` (main thread only) and sympy can run for ever
on answers such as ``9^{9^{9^{9}}}`` while holding the GIL, so equivalence checks that the
plain comparison cannot settle run in a worker process (``tmas.answers.grading_worker``) that is
killed after ``timeout_s``; a check that times out counts as wrong. Model output is never
evaluated as code.
"""

from __future__ import annotations

import atexit
import json
import select
import subprocess
import sys
import threading

from tmas.answers.parsing import normalize_answer

MAX_ANSWER_CHARS = 200
DEFAULT_TIMEOUT_S = 5.0
STARTUP_TIMEOUT_S = 120.0  # importing math-verify and sympy, on a busy machine
READY = "ready"


class BoundedGrader:
    """A math-verify worker process; each check gets at most ``timeout_s`` seconds, counted
    from when the worker is ready (its start-up, importing math-verify, has its own bound).

    Example:
        >>> grader = BoundedGrader(timeout_s=30)
        >>> grader.equivalent("\\\\frac{1}{2}", "0.5")
        True
        >>> grader.close()
    """

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self.timeouts = 0
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._ready = False

    def start_early(self) -> None:
        """Start the worker now without waiting for it (its imports take a second or two),
        so that the first check that needs it, later, does not wait for them.

        Example:
            >>> grader = BoundedGrader()
            >>> grader.start_early()
            >>> grader.equivalent("\\\\frac{1}{2}", "0.5")
            True
            >>> grader.close()
        """
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._launch()

    def _launch(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tmas.answers.grading_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self._ready = False

    def _start(self) -> subprocess.Popen | None:
        """The running worker, started (and waited for until it is ready) when needed; None
        when a new one did not get ready in time."""
        if self._process is None or self._process.poll() is not None:
            self._launch()
        assert self._process is not None and self._process.stdout is not None
        if not self._ready:
            ready, _, _ = select.select([self._process.stdout], [], [], STARTUP_TIMEOUT_S)
            if not ready or self._process.stdout.readline().strip() != READY:
                self.close()
                return None
            self._ready = True
        return self._process

    def close(self) -> None:
        """Stop the worker (a new one starts on the next check)."""
        if self._process is not None:
            self._process.kill()
            self._process.wait(timeout=5)
            for stream in (self._process.stdin, self._process.stdout):
                if stream is not None:
                    stream.close()
        self._process = None
        self._ready = False

    def equivalent(self, answer: str, gold: str) -> bool | None:
        """True/False, or None when the check ran out of time (the worker is then replaced)."""
        with self._lock:
            process = self._start()
            if process is None:
                self.timeouts += 1
                return None
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(json.dumps({"answer": answer, "gold": gold}) + "\n")
                process.stdin.flush()
            except OSError:
                self.close()
                return False
            ready, _, _ = select.select([process.stdout], [], [], self.timeout_s)
            if ready:
                line = process.stdout.readline()
                if line:
                    return line.strip() == "true"
                self.close()
                return False
            self.timeouts += 1
            self.close()
            return None


_default_grader = BoundedGrader()
atexit.register(_default_grader.close)


def start_grading_early() -> None:
    """Start the default grader's worker now, in the background (an evaluation does, before
    its first problem, so the first check that needs math-verify does not wait for it).

    Example:
        >>> start_grading_early()
    """
    _default_grader.start_early()


def is_correct(answer: str | None, gold: str | None, grader: BoundedGrader | None = None) -> bool:
    """True when ``answer`` is mathematically equivalent to ``gold``; garbage is just wrong.

    Example:
        >>> is_correct("\\\\frac{1}{2}", "0.5"), is_correct("17", "18"), is_correct(None, "1")
        (True, False, False)
    """
    if answer is None or gold is None:
        return False
    if normalize_answer(answer) == normalize_answer(gold):
        return True
    if len(answer) > MAX_ANSWER_CHARS or len(gold) > MAX_ANSWER_CHARS:
        return False
    return bool((grader or _default_grader).equivalent(answer, gold))


def pass_at_1(answers: list[str | None], gold: str | None) -> float | None:
    """Mean correctness of the candidates' answers (None without a gold answer).

    Example:
        >>> pass_at_1(["18", "17", None, "18.0"], "18")
        0.5
    """
    if gold is None or not answers:
        return None
    return sum(is_correct(a, gold) for a in answers) / len(answers)
