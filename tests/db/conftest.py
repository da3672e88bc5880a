"""Live databases for the engine tests: a throwaway PostgreSQL server and DuckDB files, both loaded with
Spider's concert_singer by sqlweave's own loader.

The PostgreSQL server is started once per test session by ``scripts/postgres.sh`` (which installs PostgreSQL
from Debian's packages when it is missing and this runs as root) in a folder of its own, and stopped at the
end. When it cannot be started the tests that need it fail with the script's message: they are never skipped.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from ..extras import need_extra

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "postgres.sh"
SINGER = ROOT / "tests" / "fixtures" / "concert_singer.sqlite"

#: Comments the fixtures put on the live databases (introspection must read them back).
NAME_COMMENT = "full name of the singer"
TABLE_COMMENT = "people who sing in concerts"


class PostgresServer:
    """The session's server: ``url(db)``, ``load(name, file)``, and ``admin(sql, db)`` as the superuser."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.env = {**os.environ, "SQLWEAVE_PG_DIR": folder, "SQLWEAVE_PYTHON": sys.executable}
        self.base_url = ""

    def script(self, *args: str, timeout: float = 900) -> str:
        try:
            proc = subprocess.run(["bash", str(SCRIPT), *args], env=self.env, capture_output=True, text=True,
                                  timeout=timeout, cwd=ROOT)
        except subprocess.TimeoutExpired as err:
            pytest.fail(f"scripts/postgres.sh {' '.join(args)} did not finish in {timeout:g} s: {err.stderr}")
        if proc.returncode != 0:
            pytest.fail(f"scripts/postgres.sh {' '.join(args)} failed (exit {proc.returncode}); PostgreSQL is "
                        f"needed for these tests:\n{proc.stderr.strip()}\n{proc.stdout.strip()}", pytrace=False)
        lines = proc.stdout.strip().splitlines()
        return lines[-1] if lines else ""

    def url(self, db: str = "postgres") -> str:
        return self.base_url.rsplit("/", 1)[0] + "/" + db

    def load(self, name: str, source: Path) -> str:
        return self.script("load", name, str(source))

    def admin(self, sql: str, db: str = "postgres") -> list[tuple]:
        """Run SQL as the superuser, committed (for fixtures and for counting rows)."""
        import psycopg

        with psycopg.connect(self.url(db).replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as c:
            cur = c.execute(sql)
            return cur.fetchall() if cur.description else []


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    need_extra("postgres")  # the driver; the server itself is installed and started by scripts/postgres.sh
    folder = tempfile.mkdtemp(prefix="sqlweave-pg-")
    server = PostgresServer(folder)
    try:
        server.base_url = server.script("start")
        yield server
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=server.env, capture_output=True, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_url(pg_server: PostgresServer) -> str:
    """concert_singer on the live server (names lower-cased by the loader), with comments, a sequence and dblink."""
    url = pg_server.load("concert_singer", SINGER)
    pg_server.admin(f"COMMENT ON COLUMN singer.name IS '{NAME_COMMENT}'", "concert_singer")
    pg_server.admin(f"COMMENT ON TABLE singer IS '{TABLE_COMMENT}'", "concert_singer")
    pg_server.admin("CREATE SEQUENCE IF NOT EXISTS ticket_seq", "concert_singer")
    try:  # contrib ships with Debian's server; the guard test refuses dblink() either way
        pg_server.admin("CREATE EXTENSION IF NOT EXISTS dblink", "concert_singer")
    except Exception:  # noqa: BLE001
        pass
    return url


@pytest.fixture(scope="session")
def duck_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """concert_singer as a DuckDB file made by the loader, with comments."""
    need_extra("duckdb")
    import duckdb
    from sqlweave.db.load import load_database

    path = tmp_path_factory.mktemp("duck") / "concert_singer.duckdb"
    load_database(SINGER, path)
    con = duckdb.connect(str(path))
    con.execute(f"COMMENT ON COLUMN singer.Name IS '{NAME_COMMENT}'")
    con.execute(f"COMMENT ON TABLE singer IS '{TABLE_COMMENT}'")
    con.close()
    return path


def events_sqlite(path: Path) -> Path:
    """A small SQLite database with ISO dates, text and NULLs, for the date and string function tests."""
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE event (id INTEGER PRIMARY KEY, name TEXT, city TEXT, happened DATE, ended DATETIME,
                            note TEXT, price REAL, booked TEXT, stamp INTEGER, paid BOOLEAN);
        INSERT INTO event VALUES
          (1, 'Spring Gala', 'Paris', '2019-03-14', '2019-03-14 22:30:00', NULL, 12.5, '2019-03-01', 1552602600, 1),
          (2, 'summer fair', 'Lyon', '2020-07-01', '2020-07-03 18:00:00', 'outdoor', 8.0, '2020-06-25', 1593799200, 0),
          (3, 'Autumn Show', 'Paris', '2020-10-31', '2020-11-01 01:15:00', NULL, 20.25, '2020-10-30', 1604193300, 1),
          (4, 'winter market', 'Nice', '2021-12-20', '2021-12-24 20:00:00', 'indoor', 5.75, '2021-11-01', 1640376000, 1);
    """)
    conn.commit()
    conn.close()
    return path


@pytest.fixture(scope="session")
def events_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return events_sqlite(tmp_path_factory.mktemp("events") / "events.sqlite")
