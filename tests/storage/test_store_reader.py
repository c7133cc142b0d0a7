"""Reading the shared store without LangGraph gives what LangGraph's SQLite store gives."""

from __future__ import annotations

from pathlib import Path

from langgraph.store.sqlite import SqliteStore

from tmas.memory.lifelong import LifelongMemory, namespaces
from tmas.storage.sqlite import connect
from tmas.storage.store_reader import SqliteStoreReader


def test_the_reader_lists_and_searches_as_the_store_does(tmp_path: Path) -> None:
    conn = connect(tmp_path / "runs.sqlite", autocommit=True)
    store = SqliteStore(conn)
    store.setup()
    for space, count in ((("tmas_memory", "math"), 3), (("tmas_memory", "math_x"), 2),
                         (("tmas_memory", "math", "deep"), 1), (("other",), 1)):  # fmt: skip
        for index in range(count):
            item = {"id": f"{'.'.join(space)}-{index}", "n": index, "created_at": float(index)}
            store.put(space, f"k{index}", item)
    reader = SqliteStoreReader(conn)
    for prefix, depth in ((("tmas_memory",), 2), ((), None), (("tmas_memory", "math"), None)):
        assert reader.list_namespaces(prefix=prefix, max_depth=depth) == sorted(
            store.list_namespaces(prefix=prefix, max_depth=depth)
        )
    for space in (("tmas_memory", "math"), ("tmas_memory", "math_x"), ("nothing",)):
        mine = sorted((i.namespace, i.key, i.value["n"]) for i in reader.search(space, limit=50))
        theirs = sorted((i.namespace, i.key, i.value["n"]) for i in store.search(space, limit=50))
        assert mine == theirs
    assert len(reader.search(("tmas_memory", "math"), limit=2, offset=2)) == 2  # 4 under it
    assert namespaces(reader) == namespaces(store) == ["math", "math_x"]
    assert LifelongMemory(reader, "math_x").items() == LifelongMemory(store, "math_x").items()
    conn.close()
