"""A throwaway PostgreSQL server on loopback, for tests and benchmarks of the PostgreSQL run
database. Uses the server binaries of the system's PostgreSQL (Debian: ``apt-get install
postgresql``); data lives in a temporary folder that is removed when the server stops.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries are installed here."""


def server_bin_dir() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl`` (newest installed version), or None.

    Example:
        >>> server_bin_dir() is None or (server_bin_dir() / "pg_ctl").exists()
        True
    """
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class TemporaryPostgres:
    """Start a private PostgreSQL server on 127.0.0.1 (as the ``postgres`` user when run as
    root, since the server refuses to run as root); ``url`` reaches its ``postgres`` database.

    Example:
        ``with TemporaryPostgres() as server: print(server.new_database())``
    """

    USER = "tmas"

    def __init__(self) -> None:
        bin_dir = server_bin_dir()
        if bin_dir is None:
            raise PostgresUnavailable("PostgreSQL is not installed (apt-get install postgresql)")
        self.bin_dir = bin_dir
        self.port = _free_port()
        self.data_dir = Path(tempfile.mkdtemp(prefix="tmas-pg-"))
        self._as_postgres = os.geteuid() == 0

    @property
    def url(self) -> str:
        return f"postgresql://{self.USER}@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if self._as_postgres:
            runuser = shutil.which("runuser", path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
            command = [runuser or "runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> TemporaryPostgres:
        if self._as_postgres:
            shutil.chown(self.data_dir, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data_dir), "-A", "trust", "-U", self.USER, "-E", "UTF8")
        options = (
            f"-p {self.port} -k {self.data_dir} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c max_connections=200"
        )
        log = self.data_dir / "server.log"
        self._run("pg_ctl", "-D", str(self.data_dir), "-o", options, "-l", str(log), "-w", "start")
        return self

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def new_database(self) -> str:
        """Create an empty database and return its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"create database {name}")
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def __enter__(self) -> TemporaryPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
