"""sqlweave against a live MariaDB server (started by scripts/mariadb.sh, see conftest.py), through PyMySQL.

The connection uses a user with every privilege (FILE included): every guarantee shown here comes from sqlweave
(the classifier, the read-only transaction, one statement per call, the server's statement time limit), not from
permissions.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

import sqlweave
from sqlweave.database import Database
from sqlweave.loading import load_database
from sqlweave.errors import (
    ExecutionError,
    MissingDependencyError,
    QueryTimeoutError,
    RefusedStatementError,
    SQLParseError,
    UnknownColumnError,
    UnknownTableError,
)
from sqlweave.llm import FakeLLM

from .conftest import NAME_COMMENT, SINGER, TABLE_COMMENT, MariaDBServer
from .suite import (
    DIALECT_CASES,
    MANY_ROW_CASES,
    MYSQL_ATTACKS,
    MYSQL_WRITES_STOPPED_BY_THE_SERVER,
    check_concert_singer_schema,
    check_tools_and_repair,
    rows,
    run_as_model_wrote_it,
)

TABLES = ["stadium", "singer", "concert", "singer_in_concert"]

#: SQLite cases whose answer is MariaDB's own on purpose: its default collation compares text without regard to
#: case, so ``instr(name, 'a')`` finds the capital A of "Autumn Show" (SQLite: 0). sqlweave leaves the server's
#: collation alone; `=` compares without case there too, as MariaDB users expect.
COLLATION_CASES = {"SELECT replace(city, 'Paris', 'PARIS'), trim('  x  '), instr(name, 'a') FROM event ORDER BY id"}


@pytest.fixture(scope="module")
def db(mariadb_url: str) -> Database:
    handle = Database.open(mariadb_url)
    yield handle
    handle.close()


def test_script_is_idempotent_and_reports_status(mariadb_server: MariaDBServer, mariadb_url: str) -> None:
    assert mariadb_server.script("start") == mariadb_server.base_url
    assert mariadb_server.script("status").startswith("running: mysql+pymysql://")
    assert mariadb_server.script("url", "concert_singer") == mariadb_url
    # the server listens on the loopback address only
    assert mariadb_server.admin("SELECT @@bind_address")[0][0] == "127.0.0.1"


def test_introspection_reads_keys_comments_samples_and_statistics(db: Database) -> None:
    assert db.dialect == "mysql" and db.name == "concert_singer"
    check_concert_singer_schema(db, NAME_COMMENT, TABLE_COMMENT)


def test_execute_returns_rows_caps_them_and_types_errors(db: Database) -> None:
    assert db.execute("SELECT Name, Age FROM singer ORDER BY Age DESC").rows[0] == ("Joe Sharp", 52)
    capped = db.execute("SELECT Name FROM singer ORDER BY Singer_ID", max_rows=2)
    assert capped.rows == (("Joe Sharp",), ("Timbaland",)) and capped.truncated
    with pytest.raises(UnknownColumnError) as col:
        db.execute("SELECT nme FROM singer")
    assert col.value.name == "nme" and col.value.message == "Unknown column 'nme' in 'SELECT'"
    with pytest.raises(UnknownTableError) as table:
        db.execute("SELECT * FROM singers")
    assert table.value.name == "singers"
    # a table is found in any case, as the schema spells it (MariaDB on Linux finds it only as spelt)
    r = db.execute("SELECT count(*) FROM SINGER AS s WHERE s.Country = 'France'")
    assert r.rows == ((4,),) and r.sql == "SELECT COUNT(*) FROM singer AS s WHERE s.Country = 'France'"
    # text that looks like markup or control characters comes back as stored
    assert db.execute("SELECT '<b>x</b>', CONCAT('a', CHAR(27 USING utf8mb4), 'b')").rows == (("<b>x</b>", "a\x1bb"),)


def test_value_index_tools_and_repair(db: Database) -> None:
    check_tools_and_repair(db)


def test_default_pipeline_answers_in_mysql_and_brings_sqlite_sql_over(mariadb_url: str) -> None:
    engine = sqlweave.connect(mariadb_url, llm=FakeLLM(["```sql\nSELECT count(*) FROM singer;\n```"]),
                              pipeline="default")
    answer = engine.ask("How many singers are there?")
    assert answer.result.rows == ((6,),) and answer.sql == "SELECT count(*) FROM singer"
    assert "MySQL" in answer.trace[2].calls[0].messages[0].content
    engine.close()
    engine = sqlweave.connect(mariadb_url, llm=FakeLLM([
        "SELECT Name || ' (' || Country || ')' FROM Singer WHERE CAST(strftime('%Y', '2014-05-01') AS INTEGER) = 2014 "
        "ORDER BY Age DESC LIMIT 1"]))
    answer = engine.ask("Who is the oldest singer, and from where?")
    assert answer.result.rows == (("Joe Sharp (Netherlands)",),)
    engine.close()


@pytest.fixture(scope="module")
def mariadb_events(mariadb_server: MariaDBServer, events_db: Path) -> Database:
    handle = Database.open(mariadb_server.load("events", events_db))
    yield handle
    handle.close()


@pytest.mark.parametrize("sql,expected_sql", [c for c in DIALECT_CASES if c[0] not in COLLATION_CASES])
def test_sqlite_dialect_sql_gives_sqlite_answers(mariadb_events: Database, events_db: Path, sql: str,
                                                 expected_sql: str | None) -> None:
    with Database.open(events_db) as reference:
        expected = rows(reference.execute(expected_sql or sql))
    ran, got = run_as_model_wrote_it(mariadb_events, sql)
    assert got == expected, f"ran on MariaDB: {ran}"


@pytest.mark.parametrize("sql,meant", MANY_ROW_CASES)
def test_subqueries_of_several_rows_mean_membership(mariadb_events: Database, events_db: Path, sql: str,
                                                    meant: str) -> None:
    with Database.open(events_db) as reference:
        expected = rows(reference.execute(meant))
    ran, got = run_as_model_wrote_it(mariadb_events, sql)
    assert got == expected, f"ran on MariaDB: {ran}"


def test_the_one_case_left_out_differs_by_collation_only(mariadb_events: Database, events_db: Path) -> None:
    (sql,) = COLLATION_CASES
    with Database.open(events_db) as reference:
        expected = rows(reference.execute(sql))
    ran, got = run_as_model_wrote_it(mariadb_events, sql)
    assert got != expected and [r[:2] for r in got] == [r[:2] for r in expected]
    # compared by bytes, the same query gives SQLite's answer
    binary = ran.replace("LOCATE('a', name)", "LOCATE('a', name COLLATE utf8mb4_bin)")
    assert binary != ran and rows(mariadb_events.execute(binary)) == expected


def test_loader_gives_text_keys_a_length_and_keeps_keys_the_rows_break(mariadb_server: MariaDBServer,
                                                                        tmp_path: Path) -> None:
    source = tmp_path / "codes.sqlite"
    with sqlite3.connect(source) as conn:
        conn.executescript("""
            CREATE TABLE country (code TEXT PRIMARY KEY, name TEXT);
            CREATE TABLE city (id INTEGER PRIMARY KEY, name TEXT, country_code TEXT REFERENCES country(code));
            INSERT INTO country VALUES ('NLD', 'Netherlands'), ('FRA', 'France');
            INSERT INTO city VALUES (1, 'Delft', 'NLD'), (2, 'Lyon', 'FRA'), (3, 'Nowhere', 'XXX');
        """)
    mariadb_server.new_database("codes")
    report = load_database(source, mariadb_server.url("codes"))
    assert report.tables == {"country": 2, "city": 3}
    assert "foreign key city(country_code) -> country(code): rows refer to missing rows; kept, not checked" \
        in report.notes
    with Database.open(mariadb_server.url("codes")) as db:
        assert db.schema().table("country").primary_key == ("code",)
        assert [str(fk) for fk in db.schema().foreign_keys] == ["city.country_code -> country.code"]
        assert db.execute("SELECT name FROM city WHERE country_code = 'XXX'").rows == (("Nowhere",),)


# --- read-only, proved with a user who could write -----------------------------------------------------


def _state(server: MariaDBServer) -> dict[str, object]:
    counts: dict[str, object] = {t: server.admin(f"SELECT count(*) FROM {t}", "concert_singer")[0][0] for t in TABLES}
    counts["tables"] = server.admin("SELECT COUNT(*) FROM information_schema.tables "
                                    "WHERE table_schema = 'concert_singer'")[0][0]
    counts["ages"] = server.admin("SELECT SUM(Age) FROM singer", "concert_singer")[0][0]
    counts["users"] = server.admin("SELECT COUNT(*) FROM mysql.user")[0][0]
    counts["max_connections"] = server.admin("SELECT @@GLOBAL.max_connections")[0][0]
    return counts


def test_the_connection_user_could_write(db: Database) -> None:
    # every privilege, reading files included: only sqlweave stands between a query and the data
    grants = " ".join(r[0] for r in db.trusted_read("SHOW GRANTS").rows)
    assert "ALL PRIVILEGES ON *.*" in grants


@pytest.mark.parametrize("sql", MYSQL_ATTACKS)
def test_every_destructive_statement_is_refused(mariadb_server: MariaDBServer, db: Database, sql: str) -> None:
    before = _state(mariadb_server)
    with pytest.raises((RefusedStatementError, SQLParseError)):
        db.execute(sql)
    assert _state(mariadb_server) == before
    assert not Path("/tmp/sqlweave-pwned.txt").exists() and not Path("/tmp/sqlweave-pwned.bin").exists()
    assert db.execute("SELECT count(*) FROM singer").rows == ((6,),)


@pytest.mark.parametrize("sql", MYSQL_WRITES_STOPPED_BY_THE_SERVER)
def test_past_the_classifier_writes_fail_inside_the_read_only_transaction(mariadb_server: MariaDBServer,
                                                                          db: Database, sql: str) -> None:
    before = _state(mariadb_server)
    with pytest.raises(ExecutionError, match="READ ONLY transaction|SQL syntax"):
        db.trusted_read(sql, timeout_s=5, max_rows=10)
    assert _state(mariadb_server) == before
    assert db.execute("SELECT count(*) FROM singer").rows == ((6,),)


def test_statement_time_limit_stops_a_runaway_query(mariadb_url: str) -> None:
    """The server itself stops the query at the limit (max_statement_time, error 1969), long before it would end
    (ten singer tables joined, 60 million rows hashed: about a minute)."""
    db = Database.open(mariadb_url, timeout_s=1)
    db.execute("SELECT 1")  # the connection is open before the clock starts
    joined = ", ".join(f"singer AS t{i}" for i in range(10))
    names = ", ".join(f"t{i}.Name" for i in range(10))
    runaway = f"SELECT COUNT(*) FROM {joined} WHERE MD5(CONCAT({names})) LIKE 'zzz%'"
    for run in (lambda: db.execute(runaway), lambda: db.trusted_read(runaway, timeout_s=1, max_rows=1)):
        start = time.perf_counter()
        with pytest.raises(QueryTimeoutError) as err:
            run()
        assert time.perf_counter() - start < 15.0
        assert err.value.__cause__.orig.args[0] == 1969  # the server's statement time limit
    assert db.execute("SELECT count(*) FROM singer").rows == ((6,),)
    db.close()


def test_the_session_reads_sql_as_the_classifier_does(mariadb_server: MariaDBServer, mariadb_url: str) -> None:
    # A server configured with ANSI_QUOTES and NO_BACKSLASH_ESCAPES would read "x" as a name and 'a\' as a whole
    # string; the session sets MySQL's default reading, which is sqlglot's.
    old = mariadb_server.admin("SELECT @@GLOBAL.sql_mode")[0][0]
    mariadb_server.admin("SET GLOBAL sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES,PIPES_AS_CONCAT'")
    try:
        with Database.open(mariadb_url) as fresh:
            assert fresh.execute('SELECT Name FROM singer WHERE Country = "France" ORDER BY Name LIMIT 1').rows == (
                ("John Nizinik",),)
            assert fresh.execute("SELECT 'a\\'b', 'c'").rows == (("a'b", "c"),)
            assert fresh.execute("SELECT @@SESSION.time_zone, @@SESSION.tx_read_only").rows == (("+00:00", 1),)
    finally:
        mariadb_server.admin(f"SET GLOBAL sql_mode = '{old}'")


def test_a_url_without_the_driver_names_the_extra(mariadb_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # mysql:// (SQLAlchemy's default driver is mysqlclient) works with the mysql extra's PyMySQL
    plain = Database.open(mariadb_url.replace("mysql+pymysql://", "mysql://"))
    assert plain.engine.url.drivername == "mysql+pymysql" and plain.execute("SELECT 1").rows == ((1,),)
    plain.close()
    maria = Database.open(mariadb_url.replace("mysql+pymysql://", "mariadb://"))
    assert maria.dialect == "mysql" and maria.execute("SELECT count(*) FROM singer").rows == ((6,),)
    maria.close()
    from sqlweave.db.backends import mysql

    monkeypatch.setattr(mysql, "importable", lambda name: False)
    with pytest.raises(MissingDependencyError) as info:
        Database.open(mariadb_url.replace("mysql+pymysql://", "mysql://"))
    assert "mysqlclient" in info.value.hint or "sqlweave[mysql]" in info.value.hint
    with pytest.raises(MissingDependencyError) as info:
        Database.open(mariadb_url.replace("mysql+pymysql://", "mysql+nosuchdriver://"))
    assert "pip install" in info.value.hint


def test_a_url_without_a_database_or_with_an_unknown_one_gets_a_clear_error(mariadb_url: str) -> None:
    from sqlweave.errors import DatabaseNotFoundError

    server = mariadb_url.rsplit("/", 1)[0]
    with pytest.raises(DatabaseNotFoundError, match="names no database") as info:
        Database.open(server.replace("sqlweave@", "sqlweave:hunter2@") + "/")
    assert "hunter2" not in str(info.value) and "mysql://user@host/shop" in info.value.hint
    with pytest.raises(DatabaseNotFoundError, match="Unknown database 'nope'") as unknown:
        Database.open(server + "/nope")
    known = mariadb_url.rsplit("/", 1)[1]  # the session's database: listed; MySQL's own are not
    listed = (unknown.value.hint or "").rsplit(": ", 1)[1].rstrip(".").removesuffix(" and more").split(", ")
    assert known in listed and "mysql" not in listed and "information_schema" not in listed
    from sqlweave.errors import DatabaseLoginError

    with pytest.raises(DatabaseLoginError, match="Access denied") as login:  # its user has no password
        Database.open(server.replace("sqlweave@", "sqlweave:wrong@") + f"/{known}")
    assert login.value.retryable is False and "wrong" not in str(login.value)


def test_a_role_granted_some_columns_reads_them_and_no_more(mariadb_server: MariaDBServer) -> None:
    # MariaDB refuses such a role the table's definition: reflection failed, and with it the whole schema
    mariadb_server.new_database("grants")
    for sql in ["CREATE TABLE staff (id int PRIMARY KEY, name text)", "INSERT INTO staff VALUES (1, 'Ada')",
                "CREATE TABLE pay (id int, staff_id int, salary int, kind enum('Base', 'Bonus'), "
                "FOREIGN KEY (staff_id) REFERENCES staff(id))",
                "INSERT INTO pay VALUES (1, 1, 100, 'Base')", "CREATE TABLE audit (who text)"]:
        mariadb_server.admin(sql, "grants")
    mariadb_server.root("DROP USER IF EXISTS 'sqlweave_reader'@'127.0.0.1'")
    mariadb_server.root("CREATE USER 'sqlweave_reader'@'127.0.0.1'")
    mariadb_server.root("GRANT SELECT ON grants.staff TO 'sqlweave_reader'@'127.0.0.1'")
    mariadb_server.root("GRANT SELECT (id, staff_id, kind) ON grants.pay TO 'sqlweave_reader'@'127.0.0.1'")
    url = mariadb_server.url("grants").replace("://sqlweave@", "://sqlweave_reader@")
    assert "sqlweave_reader@" in url
    with Database.open(url) as db:
        s = db.schema()
        assert sorted(s.table_names) == ["pay", "staff"]
        assert [c.name for c in s.table("pay").columns] == ["id", "staff_id", "kind"]
        kind = s.table("pay").column("kind")  # an enum's labels as declared, as PostgreSQL's and DuckDB's are
        assert (kind.type, kind.description) == ("ENUM", "one of 'Base', 'Bonus'")
        assert s.table("pay").row_count == 1 and s.table("pay").columns[1].samples == (1,)
        assert "pay.staff_id -> staff.id" in [str(fk) for fk in s.foreign_keys]
        assert db.execute("SELECT s.name FROM pay p JOIN staff s ON p.staff_id = s.id").rows == (("Ada",),)


def test_a_server_handle_reads_the_schema_again_when_a_column_is_added_not_when_rows_are(
        mariadb_server: MariaDBServer) -> None:
    mariadb_server.new_database("living")
    mariadb_server.admin("CREATE TABLE t (id int PRIMARY KEY)", "living")
    mariadb_server.admin("INSERT INTO t VALUES (1)", "living")
    with Database.open(mariadb_server.url("living")) as db:
        first = db.schema()
        db.recheck_s = 0
        mariadb_server.admin("INSERT INTO t VALUES (2)", "living")
        assert db.schema() is first
        mariadb_server.admin("ALTER TABLE t ADD COLUMN label varchar(20)", "living")
        assert db.schema().table("t").column_names == ("id", "label")
