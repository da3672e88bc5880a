"""Fixtures of the security suite: the tenant shop on SQLite, DuckDB, PostgreSQL and MariaDB (the live servers of
tests/db/conftest.py, started once per session for this folder as well)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterator

import pytest

from tests.db.conftest import (  # noqa: F401 - the session's live servers
    MariaDBServer,
    PostgresServer,
    mariadb_server,
    pg_server,
)

from ..extras import has_extra, need_engine
from . import tenants

ENGINES = ("sqlite", "duckdb", "postgres", "mysql")


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="session")
def tenant_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tenants")
    files = {"sqlite": tenants.build_sqlite(folder / "tenants.sqlite"),
             "oracle": tenants.build_oracle(folder / "oracle.sqlite")}
    if has_extra("duckdb"):
        files["duckdb"] = tenants.build_duckdb(folder / "tenants.duckdb")
    return files


@pytest.fixture(scope="session")
def tenant_pg(pg_server: PostgresServer) -> str:  # noqa: F811
    pg_server.admin("DROP DATABASE IF EXISTS tenants")
    pg_server.admin("CREATE DATABASE tenants")
    pg_server.admin(tenants.postgres_script(), "tenants")
    pg_server.admin("COMMENT ON COLUMN users.password_hash IS 'CANARY bcrypt hash'", "tenants")
    return pg_server.url("tenants")


@pytest.fixture(scope="session")
def tenant_mysql(mariadb_server: MariaDBServer) -> str:  # noqa: F811
    mariadb_server.admin("DROP DATABASE IF EXISTS tenants")
    mariadb_server.admin("CREATE DATABASE tenants CHARACTER SET utf8mb4")
    for stmt in tenants.postgres_script().split(";"):
        if stmt.strip():
            mariadb_server.admin(stmt, "tenants")
    mariadb_server.admin("ALTER TABLE users MODIFY password_hash TEXT COMMENT 'CANARY bcrypt hash'", "tenants")
    return mariadb_server.url("tenants")


@pytest.fixture(scope="session")
def tenant_targets(tenant_files: dict[str, Path], request: pytest.FixtureRequest) -> dict[str, str]:
    """The tenant shop on each engine this environment has (all three in the full one)."""
    out = {name: str(path) for name, path in tenant_files.items() if name in ENGINES}
    if has_extra("postgres"):
        out["postgres"] = request.getfixturevalue("tenant_pg")
    if has_extra("mysql"):
        out["mysql"] = request.getfixturevalue("tenant_mysql")
    return out


@pytest.fixture(params=ENGINES)
def engine_name(request: pytest.FixtureRequest) -> Iterator[str]:
    need_engine(request.param)
    yield request.param
