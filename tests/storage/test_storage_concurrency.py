"""Several workers opening one new run database at the same time all get a usable one."""

from __future__ import annotations

import threading
from pathlib import Path

from tmas.storage.checkpointer import open_checkpointer
from tmas.storage.run_registry import RunRegistry
from tmas.storage.sqlite import connect


def test_eight_workers_open_a_new_database_at_once(tmp_path: Path) -> None:
    for trial in range(5):
        path = tmp_path / f"runs{trial}.sqlite"
        errors: list[str] = []

        def open_it(worker: int, path: Path = path, errors: list[str] = errors) -> None:
            try:
                conn = connect(path)
                registry = RunRegistry(conn)
                open_checkpointer(conn)
                registry.create(
                    f"r{worker}",
                    problem="1+1?",
                    gold_answer=None,
                    plan={"topology": {"name": "tmas"}},
                )
            except Exception as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(repr(exc))

        threads = [threading.Thread(target=open_it, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert errors == []
        assert len(RunRegistry(connect(path)).all()) == 8
