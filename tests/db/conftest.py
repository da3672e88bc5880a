"""Live databases for the engine tests: throwaway PostgreSQL and MariaDB servers and DuckDB files, each loaded
with Spider's concert_singer by sqlweave's own loader.

The servers are started once per test session by ``scripts/postgres.sh`` and ``scripts/mariadb.sh`` (which install
them from Debian's packages when they are missing and this runs as root), each in a folder of its own, and
stopped at the end. When one cannot be started the tests that need it fail with the script's message: they are
never skipped.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Iterator

import pytest

from ..extras import need_extra

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "postgres.sh"
MARIADB_SCRIPT = ROOT / "scripts" / "mariadb.sh"
SINGER = ROOT / "tests" / "fixtures" / "concert_singer.sqlite"

#: Comments the fixtures put on the live databases (introspection must read them back).
NAME_COMMENT = "full name of the singer"
TABLE_COMMENT = "people who sing in concerts"


class ScriptServer:
    """A server run by one of the project's scripts: ``url(db)``, ``load(name, file)``, ``script(...)``."""

    script_path = SCRIPT
    folder_variable = "SQLWEAVE_PG_DIR"
    default_db = "postgres"
    what = "PostgreSQL"

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.env = {**os.environ, self.folder_variable: folder, "SQLWEAVE_PYTHON": sys.executable}
        self.base_url = ""

    def script(self, *args: str, timeout: float = 900) -> str:
        name = f"scripts/{self.script_path.name}"
        try:
            proc = subprocess.run(["bash", str(self.script_path), *args], env=self.env, capture_output=True,
                                  text=True, timeout=timeout, cwd=ROOT)
        except subprocess.TimeoutExpired as err:
            pytest.fail(f"{name} {' '.join(args)} did not finish in {timeout:g} s: {err.stderr}")
        if proc.returncode != 0:
            pytest.fail(f"{name} {' '.join(args)} failed (exit {proc.returncode}); {self.what} is needed for these "
                        f"tests:\n{proc.stderr.strip()}\n{proc.stdout.strip()}", pytrace=False)
        lines = proc.stdout.strip().splitlines()
        return lines[-1] if lines else ""

    def url(self, db: str | None = None) -> str:
        return self.base_url.rsplit("/", 1)[0] + "/" + (self.default_db if db is None else db)

    def load(self, name: str, source: Path) -> str:
        return self.script("load", name, str(source))

    def admin(self, sql: str, db: str = "") -> list[tuple]:
        """Run SQL on the server with every privilege (each server's own way)."""
        raise NotImplementedError

    def new_database(self, name: str) -> str:
        """An empty database ``name`` (one a run left is dropped first); its URL."""
        self.admin(f"DROP DATABASE IF EXISTS {name}")
        self.admin(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        subprocess.run(["bash", str(self.script_path), "stop"], env=self.env, capture_output=True, timeout=120)


class PostgresServer(ScriptServer):
    """The session's PostgreSQL server; ``admin(sql, db)`` runs SQL as the superuser."""

    def admin(self, sql: str, db: str = "postgres") -> list[tuple]:
        """Run SQL as the superuser, committed (for fixtures and for counting rows)."""
        import psycopg

        with psycopg.connect(self.url(db).replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as c:
            cur = c.execute(sql)
            return cur.fetchall() if cur.description else []


class MariaDBServer(ScriptServer):
    """The session's MariaDB server; ``admin(sql, db)`` runs SQL as its user ``sqlweave``, who may do anything."""

    script_path = MARIADB_SCRIPT
    folder_variable = "SQLWEAVE_MARIADB_DIR"
    default_db = ""
    what = "MariaDB"

    def admin(self, sql: str, db: str = "") -> list[tuple]:
        """Run one statement, committed (for fixtures and for counting rows)."""
        import pymysql
        from sqlalchemy.engine import make_url

        u = make_url(self.url(db))
        with pymysql.connect(host=u.host, port=u.port, user=u.username, database=db or None, autocommit=True,
                             charset="utf8mb4") as c, c.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall()) if cur.description else []

    def root(self, sql: str, db: str = "") -> None:
        """Run one statement as the server's root, over its socket (granting privileges to another user)."""
        import pymysql

        with pymysql.connect(unix_socket=os.path.join(self.folder, "mysqld.sock"), user="root", database=db or None,
                             autocommit=True) as c, c.cursor() as cur:
            cur.execute(sql)


class Forwarder:
    """A TCP port that forwards to a server until :meth:`stop` (connections cut, new ones refused) and again after
    :meth:`start`, on the same port: a database server that goes away and comes back."""

    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.port = 0
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.start()

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen()
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes the thread waiting in accept (close does not)
            except OSError:
                pass
            self._listener.close()
            self._listener = None
        for sock in self._sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self._sockets.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the databases whose schema was read from the database itself (not from disk)."""
    import sqlweave.db.introspect as introspect_module

    seen: list[str] = []
    real = introspect_module.introspect

    def counted(db, progress=None):  # type: ignore[no-untyped-def]
        seen.append(db.name)
        return real(db, progress)

    monkeypatch.setattr(introspect_module, "introspect", counted)
    return seen


def _serve(server: ScriptServer) -> Iterator[ScriptServer]:
    """Start ``server`` in its folder, yield it, then stop it and remove the folder."""
    try:
        server.base_url = server.script("start")
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[ScriptServer]:
    need_extra("mysql")  # the driver; the server itself is installed and started by scripts/mariadb.sh
    # a short folder: the server's socket path must fit in 107 bytes
    yield from _serve(MariaDBServer(tempfile.mkdtemp(prefix="sqlweave-my-", dir="/tmp")))


@pytest.fixture(scope="session")
def mariadb_url(mariadb_server: MariaDBServer) -> str:
    """concert_singer on the live MariaDB server, with comments."""
    url = mariadb_server.load("concert_singer", SINGER)
    mariadb_server.admin(f"ALTER TABLE singer MODIFY Name TEXT COMMENT '{NAME_COMMENT}'", "concert_singer")
    mariadb_server.admin(f"ALTER TABLE singer COMMENT = '{TABLE_COMMENT}'", "concert_singer")
    return url


@pytest.fixture(scope="session")
def pg_server() -> Iterator[ScriptServer]:
    need_extra("postgres")  # the driver; the server itself is installed and started by scripts/postgres.sh
    yield from _serve(PostgresServer(tempfile.mkdtemp(prefix="sqlweave-pg-")))


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
    from sqlweave.loading import load_database

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
        -- numbers kept as text, as files loaded without a schema keep them: a few rows spell none
        CREATE TABLE stall (id INTEGER PRIMARY KEY, event_id INTEGER, visitors TEXT, rating TEXT);
        INSERT INTO stall VALUES (1, 1, '120', '4.5'), (2, 1, ' 85', 'n/a'), (3, 3, 'null', '3'),
                                 (4, 3, '1000', '4.75'), (5, 4, '', '2.5');
    """)
    conn.commit()
    conn.close()
    return path


@pytest.fixture(scope="session")
def events_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return events_sqlite(tmp_path_factory.mktemp("events") / "events.sqlite")
