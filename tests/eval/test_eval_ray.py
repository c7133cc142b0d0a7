"""``tmas eval --ray``: problems run as Ray tasks on a local Ray cluster, sharing one
OpenAI-compatible endpoint and one PostgreSQL run database; a rerun skips finished problems."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tmas.storage import open_storage
from tmas.testing.fake_openai_server import FakeOpenAIServer

pytestmark = pytest.mark.slow

# A cluster on loopback only: Ray would otherwise swap 127.0.0.1 for the machine's address.
LOOPBACK_ENV = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
PROBLEMS = 4


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """The address of a Ray head started with ``ray start`` on loopback (2 CPUs)."""
    ray = shutil.which("ray", path=str(Path(sys.executable).parent))
    assert ray, "the ray extra is part of the test install"
    port = free_port()
    subprocess.run(
        [
            ray,
            "start",
            "--head",
            "--node-ip-address",
            "127.0.0.1",
            "--port",
            str(port),
            "--num-cpus",
            "2",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        check=True,
        capture_output=True,
        env=LOOPBACK_ENV,
        timeout=180,
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True, timeout=120)


def evaluate(
    address: str, server: FakeOpenAIServer, db: str, out: Path
) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "tmas.cli",
        "eval",
        "--graph",
        "tmas",
        "--limit",
        str(PROBLEMS),
        "--concurrency",
        "2",
        "--base-url",
        server.base_url,
        "--model",
        "scripted",
        "-n",
        "2",
        "-m",
        "1",
        "-t",
        "2",
        "--ray",
        address,
        "--db",
        db,
        "--out",
        str(out),
    ]
    return subprocess.run(command, capture_output=True, text=True, env=LOOPBACK_ENV, timeout=600)


def test_problems_run_as_ray_tasks_and_a_rerun_skips_them(
    ray_cluster: str, postgres_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "eval"
    with FakeOpenAIServer() as server:
        first = evaluate(ray_cluster, server, postgres_url, out)
        assert first.returncode == 0, first.stdout + first.stderr
        calls = server.request_count
        rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        assert len(rows) == PROBLEMS
        assert {(row["status"], row["error"]) for row in rows} == {("finished", None)}
        assert calls == PROBLEMS * 20  # N=2, M=1, T=2 TMAS: 10 calls per iteration

        storage = open_storage(postgres_url)
        try:
            records = storage.registry.all()
        finally:
            storage.close()
        assert sorted(r.run_id for r in records) == sorted(row["run_id"] for row in rows)
        assert {r.status for r in records} == {"finished"}
        assert all(r.pid and r.pid != os.getpid() for r in records)  # solved in Ray workers

        again = evaluate(ray_cluster, server, postgres_url, out)
        assert again.returncode == 0, again.stdout + again.stderr
        assert server.request_count == calls  # every problem was finished: no call repeated


def test_an_unreachable_ray_cluster_is_a_clear_error(postgres_url: str, tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        result = evaluate(f"127.0.0.1:{free_port()}", server, postgres_url, tmp_path / "eval")
    assert result.returncode != 0
    assert "cannot reach the Ray cluster at 127.0.0.1:" in " ".join(
        result.stdout.split() + result.stderr.split()
    )
    assert "Traceback" not in result.stderr
