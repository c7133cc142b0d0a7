"""Fixtures shared across the suite.

The test command (``bash .ci/run``) installs everything the tests use, so no test skips for
want of something it installs: a missing PostgreSQL server, Chromium or Python package fails
the tests that need it, naming what to install (a missing package fails at its import).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tmas.registration import Registry, registry
from tmas.testing.postgres_server import TemporaryPostgres, server_bin_dir

INSTALL_HINT = "or run bash .ci/run, which installs everything the tests need"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[TemporaryPostgres]:
    """A private PostgreSQL server for the whole session, from the system's server binaries;
    without them the tests that need it fail."""
    if server_bin_dir() is None:
        pytest.fail(
            "PostgreSQL's server is not installed: install it (Debian: apt-get install "
            f"postgresql) {INSTALL_HINT}",
            pytrace=False,
        )
    with TemporaryPostgres() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: TemporaryPostgres) -> str:
    """The URL of a new, empty database on the session's PostgreSQL server."""
    return postgres_server.new_database()


@pytest.fixture
def restored_registry() -> Iterator[Registry]:
    """The process's registry; what a test registers in it is forgotten after the test."""
    found = registry()
    saved = found.snapshot()
    yield found
    found.restore(saved)
