"""PrefixAffinityLock: exclusive, and the next holder is the best prefix match."""

from __future__ import annotations

import threading
import time

from tmas.llm.prefix_gate import PrefixAffinityLock


def _wait_for_waiters(gate: PrefixAffinityLock, count: int) -> None:
    deadline = time.monotonic() + 5
    while len(gate._waiting) < count:
        assert time.monotonic() < deadline, "waiters never queued"
        time.sleep(0.01)


def test_next_holder_shares_the_longest_prefix_with_the_last_prompt() -> None:
    gate = PrefixAffinityLock()
    served: list[str] = []
    threads = []
    with gate.hold("sys|problem A|solution 1"):
        for key in (
            "sys|problem B|solution 9",
            "sys|problem A|solution 2",
            "sys|problem A|solution 1",
        ):
            thread = threading.Thread(target=lambda k=key: _serve(gate, k, served))
            thread.start()
            threads.append(thread)
            _wait_for_waiters(gate, len(threads))
    for thread in threads:
        thread.join(timeout=5)
    assert served == [
        "sys|problem A|solution 1",
        "sys|problem A|solution 2",
        "sys|problem B|solution 9",
    ]


def _serve(gate: PrefixAffinityLock, key: str, served: list[str]) -> None:
    with gate.hold(key):
        served.append(key)


def test_holders_never_overlap() -> None:
    gate = PrefixAffinityLock()
    inside = 0
    peak = 0
    guard = threading.Lock()

    def work(i: int) -> None:
        nonlocal inside, peak
        with gate.hold(f"key {i % 3}"):
            with guard:
                inside += 1
                peak = max(peak, inside)
            time.sleep(0.002)
            with guard:
                inside -= 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert peak == 1
    assert not gate._waiting


def test_equal_prompts_keep_arrival_order() -> None:
    gate = PrefixAffinityLock()
    served: list[str] = []
    threads = []
    with gate.hold("x"):
        for name in ("first", "second", "third"):
            thread = threading.Thread(target=lambda n=name: _serve_named(gate, n, served))
            thread.start()
            threads.append(thread)
            _wait_for_waiters(gate, len(threads))
    for thread in threads:
        thread.join(timeout=5)
    assert served == ["first", "second", "third"]


def _serve_named(gate: PrefixAffinityLock, name: str, served: list[str]) -> None:
    with gate.hold("same prompt"):
        served.append(name)
