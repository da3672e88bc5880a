"""Fixtures for the evaluation tests: the live PostgreSQL server of ``tests/db/conftest.py`` (its session fixture,
imported here so that these tests can use it), and defog's smallest database loaded into it from its dump."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SHARED
from tests.db.conftest import PostgresServer, pg_server  # noqa: F401  (the session's server, for tests here)

DEFOG = SHARED / "data" / "defog"
#: defog's smallest dump (3 tables, 25 questions).
DEFOG_SMALLEST = "restaurants"


@pytest.fixture(scope="session")
def defog_restaurants(pg_server: PostgresServer) -> str:  # noqa: F811
    """The URL of defog's ``restaurants`` database, loaded from its dump by ``scripts/postgres.sh load``."""
    dump = DEFOG / "databases" / DEFOG_SMALLEST / f"{DEFOG_SMALLEST}.sql"
    if not dump.is_file():
        pytest.skip("needs ../shared/data/defog")
    return pg_server.load(DEFOG_SMALLEST, Path(dump))
