"""Process trees on Linux (``/proc``): whether a process still runs, which processes one
started, and a watchdog that stops processes when the process that started them dies.

The watchdog runs as ``python -I tmas/process_tree.py PID...`` with its stdin a pipe from the
guarded process: when that process exits or is killed, the pipe reaches end of file and the
watchdog stops the given processes and everything they started. This file needs nothing but
the standard library, so the watchdog starts fast and small.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

STOP_GRACE_S = 5.0


def alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (exited, not yet reaped) counts as gone.

    Example:
        >>> alive(os.getpid())
        True
    """
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "\nState:\tZ" not in status


def descendants(pid: int) -> list[int]:
    """Every process ``pid`` started, and those they started, that runs now.

    Example:
        >>> child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
        >>> child.pid in descendants(os.getpid())
        True
        >>> child.kill(); _ = child.wait()
    """
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    frontier = [pid]
    while frontier:
        children = parents.get(frontier.pop(), [])
        found += children
        frontier += children
    return found


def stop_trees(pids: list[int], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM ``pids`` and every process they started, then SIGKILL what still runs after
    ``grace_s`` seconds.

    Example:
        >>> child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        >>> stop_trees([child.pid]); child.wait() != 0
        True
    """
    targets = [pid for root in pids for pid in (root, *descendants(root))]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in targets:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_s
        while any(alive(pid) for pid in targets) and time.monotonic() < deadline:
            time.sleep(0.1)


def guard(pids: list[int]) -> subprocess.Popen:
    """Start a watchdog that stops ``pids`` (and what they started) once this process is gone.
    Keep the returned handle: closing its stdin (or exiting) sets the watchdog off.

    Example:
        >>> child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        >>> watchdog = guard([child.pid])
        >>> watchdog.stdin.close(); _ = watchdog.wait(); child.wait() != 0
        True
    """
    return subprocess.Popen(
        [sys.executable, "-I", str(Path(__file__).resolve()), *map(str, pids)],
        stdin=subprocess.PIPE,
        start_new_session=True,  # a Ctrl-C at the terminal does not reach it
    )


def _watch(argv: list[str]) -> None:
    """Wait for end of file on stdin, then stop the processes named in ``argv``."""
    pids = [int(arg) for arg in argv]
    sys.stdin.buffer.read()
    stop_trees(pids)


if __name__ == "__main__":
    _watch(sys.argv[1:])
