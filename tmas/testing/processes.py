"""Looking at processes from tests (Linux ``/proc``): whether one still runs, and which
processes one started."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (exited, not yet reaped) counts as gone.

    Example:
        >>> import os
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
        >>> import os, subprocess, sys
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
