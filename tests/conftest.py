"""Fixtures shared across the suite."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tmas.testing.postgres_server import TemporaryPostgres, server_bin_dir


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[TemporaryPostgres]:
    """A private PostgreSQL server for the whole session. CI installs PostgreSQL, so there a
    missing server fails the tests that need it instead of skipping them."""
    if server_bin_dir() is None:
        message = "PostgreSQL server not installed (apt-get install postgresql)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with TemporaryPostgres() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: TemporaryPostgres) -> str:
    """The URL of a new, empty database on the session's PostgreSQL server."""
    return postgres_server.new_database()
