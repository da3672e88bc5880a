"""sqlweave against a live PostgreSQL server (started by scripts/postgres.sh, see conftest.py).

The connection uses the superuser, a role that could write anything: every guarantee shown here comes from
sqlweave (the classifier, the read-only transaction, the single-statement protocol), not from permissions.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import sqlweave
from sqlweave.agent.tools import Toolkit
from sqlweave.database import Database
from sqlweave.loading import load_database
from sqlweave.errors import (
    DatabaseNotFoundError,
    ExecutionError,
    MissingDependencyError,
    QueryTimeoutError,
    RefusedStatementError,
    SchemaError,
    SQLParseError,
)
from sqlweave.llm import FakeLLM
from sqlweave.retrieval.values import ValueIndex
from sqlweave.sql.repair import repair_schema_links
from sqlweave.sql.rewrite import relink_values
from sqlweave.sql.transpile import to_dialect
from sqlweave.stages.rewrite import value_probe

from ..conftest import keyless_shop
from .conftest import NAME_COMMENT, SINGER, TABLE_COMMENT, Forwarder, PostgresServer
from .suite import (
    DIALECT_CASES,
    MANY_ROW_CASES,
    PG_ATTACKS,
    PG_WRITES_STOPPED_BY_THE_SERVER,
    POSTGRES_ON_SQLITE,
    TEXT_NUMBER_CASES,
    rows,
    run_as_model_wrote_it,
)

TABLES = ["stadium", "singer", "concert", "singer_in_concert"]


@pytest.fixture(scope="module")
def db(pg_url: str) -> Database:
    handle = Database.open(pg_url)
    yield handle
    handle.close()


def test_script_is_idempotent_and_reports_status(pg_server: PostgresServer, pg_url: str) -> None:
    assert pg_server.script("start") == pg_server.base_url
    assert pg_server.script("status").startswith("running: postgresql+psycopg://")
    assert pg_server.script("url", "concert_singer") == pg_url


def test_introspection_reads_keys_comments_samples_and_statistics(db: Database) -> None:
    assert db.dialect == "postgres" and db.name == "concert_singer"
    s = db.schema()
    assert set(s.table_names) == set(TABLES)
    singer = s.table("singer")
    assert singer.primary_key == ("singer_id",)
    assert s.table("singer_in_concert").primary_key == ("concert_id", "singer_id")
    assert singer.description == TABLE_COMMENT
    assert singer.column("name").description == NAME_COMMENT
    assert singer.row_count == 6 and len(singer.sample_rows) == 3
    age = singer.column("age")
    assert age.type == "INTEGER" and age.stats.minimum == 25 and age.stats.maximum == 52 and age.stats.distinct == 6
    assert len(singer.column("country").samples) == 3
    assert {str(fk) for fk in s.foreign_keys} == {
        "concert.stadium_id -> stadium.stadium_id",
        "singer_in_concert.singer_id -> singer.singer_id",
        "singer_in_concert.concert_id -> concert.concert_id",
    }


def test_execute_returns_rows_and_caps_them(db: Database) -> None:
    r = db.execute("SELECT name, age FROM singer ORDER BY age DESC")
    assert r.columns == ("name", "age") and r.rows[0] == ("Joe Sharp", 52) and r.row_count == 6
    capped = db.execute("SELECT name FROM singer", max_rows=4)
    assert capped.row_count == 4 and capped.truncated
    # Spider's gold SQL compares its text-typed years with numbers; the loader stored them as integers.
    assert db.execute("SELECT count(*) FROM concert WHERE year = 2014 OR year = '2015'").rows == ((6,),)
    with pytest.raises(ExecutionError, match="does not exist"):
        db.execute("SELECT nme FROM singer")
    # The session is usable after an error.
    assert db.execute("SELECT count(*) FROM singer").rows == ((6,),)


def test_value_index_finds_stored_spellings(db: Database) -> None:
    idx = ValueIndex.build(db, persist=False)
    hit = idx.search("Frence", k=1)[0]
    assert (hit.table, hit.column, hit.value) == ("singer", "country", "France")
    assert idx.search("nederland", table="singer", column="country", k=1)[0].value == "Netherlands"


def test_agent_tools_search_value_and_shortest_path(db: Database) -> None:
    kit = Toolkit(db)
    assert kit.search_value("Frence")[0].value == "France"
    path = kit.find_shortest_path("singer.name", "stadium.name")
    assert path.tables == ("singer", "singer_in_concert", "concert", "stadium") and not path.inferred
    assert kit.execute_sql(f"SELECT count(*) {path.from_clause}").rows[0][0] > 0
    ran = kit.execute_sql("SELECT T2.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id")
    assert "T1.name" in ran.sql and ran.row_count > 0


def test_rule_based_repair_runs_on_postgres(db: Database) -> None:
    s = db.schema()
    fixed = repair_schema_links("SELECT concert_name FROM singer WHERE name = 'Timbaland'", s, db.dialect)
    assert fixed.changed and "JOIN" in fixed.sql
    assert sorted(db.execute(fixed.sql).rows) == [("Auditions",), ("Week 2",)]
    respelt = repair_schema_links("SELECT nme FROM singers", s, db.dialect)
    assert respelt.sql == "SELECT name FROM singer" and db.execute(respelt.sql).row_count == 6


def test_texts_are_relinked_by_asking_postgres(db: Database) -> None:
    holds = value_probe(db)
    relinked = relink_values("SELECT name FROM singer WHERE name = 'France'", db.schema(), holds, db.dialect)
    assert relinked.sql == "SELECT name FROM singer WHERE country = 'France'" and db.execute(relinked.sql).row_count == 4
    # PostgreSQL refuses to compare a number column with a text: the probe cannot tell, and nothing changes.
    assert holds("singer", "age", "France") is None
    assert not relink_values("SELECT name FROM singer WHERE age = 'France'", db.schema(), holds, db.dialect).changed


def test_default_pipeline_answers_how_many_singers(pg_url: str) -> None:
    engine = sqlweave.connect(pg_url, llm=FakeLLM(["```sql\nSELECT count(*) FROM singer;\n```"]), pipeline="default")
    answer = engine.ask("How many singers are there?")
    assert answer.result.rows == ((6,),) and answer.sql == "SELECT count(*) FROM singer"
    system = answer.trace[2].calls[0].messages[0].content
    assert "PostgreSQL" in system
    engine.close()


def test_default_pipeline_transpiles_and_repairs(pg_url: str) -> None:
    llm = FakeLLM(["SELECT `name` FROM singer WHERE strftime('%Y', '2014-01-01') = '2014' ORDER BY age DESC LIMIT 0, 1",
                   "SELECT T2.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id "
                   "WHERE T1.age > 40"])
    engine = sqlweave.connect(pg_url, llm=llm, pipeline="default")
    first = engine.ask("Who is the oldest singer?")
    assert first.result.rows == (("Joe Sharp",),)
    assert first.trace[3].notes["written"].startswith("SELECT `name`") and "LIMIT 1 OFFSET 0" in first.sql
    second = engine.ask("Which singers older than 40 sang in a concert?")
    assert second.ok and second.result.rows and "T1.name" in second.sql
    assert [e.stage for e in second.trace][-5:] == ["repair", "correct", "rewrite", "vote_if_unsure", "name_keys"]
    assert "JOIN singer_in_concert" in second.sql  # the question names the joined table: the rewrite keeps it
    engine.close()


@pytest.fixture(scope="module")
def pg_events(pg_server: PostgresServer, events_db: Path) -> Database:
    handle = Database.open(pg_server.load("events", events_db))
    yield handle
    handle.close()


@pytest.mark.parametrize("sql,expected_sql", DIALECT_CASES)
def test_sqlite_dialect_sql_gives_sqlite_answers(pg_events: Database, events_db: Path, sql: str,
                                                 expected_sql: str | None) -> None:
    with Database.open(events_db) as reference:
        expected = rows(reference.execute(expected_sql or sql))
    ran, got = run_as_model_wrote_it(pg_events, sql)
    assert got == expected, f"ran on PostgreSQL: {ran}"


@pytest.mark.parametrize("sql,meant", TEXT_NUMBER_CASES + MANY_ROW_CASES)
def test_numbers_kept_as_text_and_subqueries_of_several_rows_mean_what_they_say(
        pg_events: Database, events_db: Path, sql: str, meant: str) -> None:
    with Database.open(events_db) as reference:
        expected = rows(reference.execute(meant))
    ran, got = run_as_model_wrote_it(pg_events, sql)
    assert got == expected, f"ran on PostgreSQL: {ran}"


@pytest.mark.parametrize("sql,meant", POSTGRES_ON_SQLITE)
def test_postgres_forms_sqlite_lacks_mean_there_what_they_mean_here(pg_events: Database, events_db: Path, sql: str,
                                                                    meant: str) -> None:
    """The SQLite reading of a median or a month name (tests/db/test_connection.py) is PostgreSQL's own."""
    with Database.open(events_db) as reference:
        expected = rows(reference.execute(meant))
    assert rows(pg_events.execute(sql)) == expected


def test_keys_are_read_from_the_data_of_a_server_database_that_declares_none(pg_server: PostgresServer,
                                                                               tmp_path: Path) -> None:
    with Database.open(pg_server.load("keyless", keyless_shop(tmp_path / "shop.sqlite"))) as db:
        s = db.schema()
        assert s.keys_from_data and sorted(str(fk) for fk in s.foreign_keys) == [
            "order_lines.order_id -> orders.id", "orders.customer_id -> customers.customer_id"]
        assert s.table("customers").primary_key == ("customer_id",)
        assert s.table("order_lines").primary_key == ("order_id", "line_no")
        assert db.trusted_read("SELECT count(*) FROM information_schema.table_constraints WHERE "
                               "constraint_type = 'FOREIGN KEY'").rows == ((0,),)  # the server is not changed


def test_tables_of_the_schemas_named_are_read_in_search_path_order(pg_server: PostgresServer) -> None:
    pg_server.new_database("schemas_shop")
    pg_server.admin('CREATE SCHEMA sales; CREATE SCHEMA "Hr Dept"; '
                    "CREATE TABLE public.orders (note text); INSERT INTO public.orders VALUES ('archived'); "
                    "CREATE TABLE public.notes (body text); "
                    "CREATE TABLE sales.customers (id int PRIMARY KEY, name text); "
                    "CREATE TABLE sales.orders (id int PRIMARY KEY, customer_id int REFERENCES sales.customers(id), "
                    "total numeric); INSERT INTO sales.customers VALUES (1, 'Ada'), (2, 'Bo'); "
                    "INSERT INTO sales.orders VALUES (10, 1, 5), (11, 1, 7.5), (12, 2, 1); "
                    'CREATE TABLE "Hr Dept".staff (id int PRIMARY KEY, customer_id int REFERENCES sales.customers(id)); '
                    "INSERT INTO \"Hr Dept\".staff VALUES (1, 2)", "schemas_shop")
    url = pg_server.url("schemas_shop")
    with Database.open(url) as db:  # by default the connection's search path: public
        s = db.schema()
        assert sorted(s.table_names) == ["notes", "orders"] and s.schemas == () and s.shadowed == ()
    with Database.open(url, schemas=["sales", "Hr Dept", "public"]) as db:
        s = db.schema()
        assert s.schemas == ("sales", "Hr Dept", "public")
        assert sorted(s.table_names) == ["customers", "notes", "orders", "staff"]
        assert [c.name for c in s.table("orders").columns] == ["id", "customer_id", "total"]  # sales' orders
        assert s.shadowed == ("public.orders",)  # named, not read: the user learns it is there
        assert sorted(str(fk) for fk in s.foreign_keys) == [  # a key across two schemas too
            "orders.customer_id -> customers.id", "staff.customer_id -> customers.id"]
        assert db.execute("SELECT c.name, sum(o.total) FROM orders o JOIN customers c ON o.customer_id = c.id "
                          "GROUP BY 1 ORDER BY 1").rows == (("Ada", 12.5), ("Bo", 1))
        assert db.execute("SELECT c.name FROM staff s JOIN customers c ON s.customer_id = c.id").rows == (("Bo",),)
        with pytest.raises(RefusedStatementError):  # a query cannot move the search path
            db.execute("SET search_path TO public")
    with Database.open(url, schemas=["public", "sales"]) as db:  # the first schema holding a name wins
        assert [c.name for c in db.schema().table("orders").columns] == ["note"]
        assert db.schema().shadowed == ("sales.orders",)
        assert db.execute("SELECT note FROM orders").rows == (("archived",),)
    with pytest.raises(SchemaError, match="has no schema 'salez'") as err:
        Database.open(url, schemas=["salez"])
    assert "sales (2 tables)" in (err.value.hint or "") and "Hr Dept (1 table)" in (err.value.hint or "")


def test_a_partitioned_table_is_read_as_one_and_a_materialized_view_as_a_table(pg_server: PostgresServer) -> None:
    pg_server.new_database("parts")
    pg_server.admin("CREATE TABLE events (id int, day date, kind text) PARTITION BY RANGE (day); "
                    "CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01') "
                    "PARTITION BY LIST (kind); CREATE TABLE events_2024_a PARTITION OF events_2024 FOR VALUES IN ('a'); "
                    "CREATE TABLE events_2024_b PARTITION OF events_2024 FOR VALUES IN ('b'); "
                    "CREATE TABLE events_2025 PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01'); "
                    "INSERT INTO events VALUES (1, '2024-03-01', 'a'), (2, '2024-04-01', 'b'), (3, '2025-02-01', 'a'); "
                    "CREATE MATERIALIZED VIEW kinds AS SELECT kind, count(*) AS n FROM events GROUP BY kind; "
                    "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy'); "
                    "CREATE TABLE tagged (id int, tags text[], scores integer[], m mood, meta json); "
                    "COMMENT ON COLUMN tagged.m IS 'how it went'; "
                    "INSERT INTO tagged VALUES (1, '{a}', '{1}', 'ok', '{}'), (2, NULL, NULL, 'sad', NULL)",
                    "parts")
    with Database.open(pg_server.url("parts")) as db:
        s = db.schema()
        assert sorted(s.table_names) == ["events", "kinds", "tagged"]  # no partition, at any level
        assert [c.type for c in s.table("tagged").columns] == ["INTEGER", "TEXT[]", "INTEGER[]", "ENUM", "JSON"]
        # statistics: JSON has no MIN, so the table's one query fails and each column is read alone
        stats = {c.name: c.stats for c in s.table("tagged").columns}
        assert (stats["id"].distinct, stats["id"].minimum, stats["id"].maximum) == (2, 1, 2)
        assert stats["m"].nulls == 0 and stats["tags"].nulls == 1 and stats["meta"].distinct is None
        assert s.table("events").columns[0].stats.distinct == 3  # read by the table's one query
        # an enum is text with labels (its description names them, after the column's comment), not "VARCHAR(5)"
        mood = s.table("tagged").column("m")
        assert mood.is_text and mood.description == "how it went; one of 'sad', 'ok', 'happy'"
        r = db.execute("SELECT count(*) FROM tagged WHERE m LIKE 'o%'")  # no LIKE for an enum: read as text
        assert r.rows == ((1,),) and "CAST(m AS TEXT)" in r.sql
        assert s.table("events").row_count == 3 and [c.name for c in s.table("kinds").columns] == ["kind", "n"]
        assert db.execute("SELECT n FROM kinds WHERE kind = 'a'").rows == ((2,),)


def test_array_samples_are_written_as_postgresql_reads_them_and_like_reads_an_array_as_text(
        pg_server: PostgresServer) -> None:
    # the driver gives an array as a Python list: the prompt showed ['sql', 'db'], which is no PostgreSQL value
    pg_server.new_database("arrays")
    pg_server.admin("CREATE TABLE posts (id int, tags text[], grid int[][]); INSERT INTO posts VALUES "
                    "(1, ARRAY['sql', 'big data', NULL, 'a\"b', 'c\\d', '', 'null', 'x,y', '{'], '{{1,2},{3,4}}'), "
                    "(2, '{web}', NULL)", "arrays")
    with Database.open(pg_server.url("arrays")) as db:
        cols = {c.name: c for c in db.schema(refresh=True).table("posts").columns}
        assert set(cols["tags"].samples) == {'{sql,"big data",NULL,"a\\"b","c\\\\d","","null","x,y","{"}', "{web}"}
        assert cols["grid"].samples == ("{{1,2},{3,4}}",)
        for sample in cols["tags"].samples + cols["grid"].samples:  # each one a value the query finds again
            column = "tags" if sample in cols["tags"].samples else "grid"
            literal = sample.replace("'", "''")
            assert db.execute(f"SELECT id FROM posts WHERE {column} = '{literal}'").rows, sample
        r = db.execute("SELECT id FROM posts WHERE tags LIKE '%big data%'")  # no LIKE for an array: read as text
        assert r.rows == ((1,),) and "CAST(tags AS TEXT)" in r.sql


def test_a_server_that_goes_away_is_a_typed_error_no_model_call_and_503_and_it_comes_back(pg_url: str) -> None:
    from sqlalchemy.engine import make_url

    from sqlweave.errors import DatabaseUnavailableError

    url = make_url(pg_url)
    proxy = Forwarder(url.host or "127.0.0.1", url.port or 5432)
    near = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    llm = FakeLLM(["SELECT count(*) FROM singer"] * 4)
    engine = sqlweave.connect(near, llm=llm)
    try:
        assert engine.db.execute("SELECT count(*) FROM singer").rows == ((6,),)
        engine.db.schema()  # read before the server goes (a server's handle has read it)
        proxy.stop()
        with pytest.raises(DatabaseUnavailableError) as err:  # was the driver's OperationalError
            engine.db.execute("SELECT count(*) FROM singer")
        assert err.value.message == "cannot reach the database: the connection was refused"
        assert str(proxy.port) not in str(err.value) and "Connection refused" in err.value.details["driver"]
        answer = engine.pipeline.run("How many singers are there?", engine.db, llm)
        assert answer.error is not None and answer.error.code == "database_unavailable"
        assert answer.model_calls == 1  # the SQL is not at fault: no correction, no vote
        assert [e.stage for e in answer.trace][-1] == "execute"
        with pytest.raises(DatabaseUnavailableError, match="cannot connect to"):  # opened while it is away
            Database.open(near)
        proxy.start()
        with pytest.raises(DatabaseNotFoundError):  # a database the server does not have is not found
            Database.open(url.set(host="127.0.0.1", port=proxy.port, database="nope").render_as_string(False))
        assert engine.db.execute("SELECT count(*) FROM singer").rows == ((6,),)  # back, by itself
        with engine.db.engine.connect() as con:  # a lost server is given up on, not waited for
            given = con.connection.dbapi_connection.info.get_parameters()
        assert (given["connect_timeout"], given["keepalives_idle"], given["keepalives_count"]) == ("10", "10", "3")
        assert engine.ask("How many singers are there?").result.rows == ((6,),)
    finally:
        engine.close()
        proxy.stop()


def test_a_connection_that_fails_says_why_and_what_to_do(pg_server: PostgresServer) -> None:
    from sqlalchemy.engine import make_url

    from sqlweave.errors import DatabaseLoginError, DatabaseUnavailableError

    pg_server.new_database("kept_private")
    pg_server.admin("DROP ROLE IF EXISTS lister; DROP ROLE IF EXISTS barred; CREATE ROLE lister LOGIN; "
                    "CREATE ROLE barred NOLOGIN; REVOKE CONNECT ON DATABASE kept_private FROM PUBLIC")
    url = make_url(pg_server.url("postgres"))
    with pytest.raises(DatabaseNotFoundError, match='database "nosuchdb" does not exist') as err:
        Database.open(url.set(username="lister", database="nosuchdb").render_as_string(hide_password=False))
    hint = err.value.hint or ""
    assert hint.startswith("Check the database's name at the end of the URL. The databases this user may connect "
                           "to there: ")
    listed = hint.rsplit(": ", 1)[1].rstrip(".").removesuffix(" and more").split(", ")
    assert "postgres" in listed and "kept_private" not in listed and "template0" not in listed
    for user, said in (("nobody", 'role "nobody" does not exist'), ("barred", "not permitted to log in")):
        with pytest.raises(DatabaseLoginError, match=said) as login:
            Database.open(url.set(username=user).render_as_string(hide_password=False))
        assert login.value.code == "database_login_refused" and login.value.retryable is False
        assert "OperationalError" not in login.value.message  # the driver's words, not SQLAlchemy's wrapping
        assert isinstance(login.value, DatabaseUnavailableError)  # no query ran: callers that catch it still do
        assert "password" in (login.value.hint or "")
    with pytest.raises(DatabaseNotFoundError) as host:
        Database.open(url.set(host="no-such-host.invalid").render_as_string(hide_password=False))
    assert host.value.hint == "Check the host name in the URL: it is not known from this machine."


@pytest.mark.extra("server")
def test_the_http_api_says_a_refused_login_does_not_pass_by_itself(pg_server: PostgresServer, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient
    from sqlalchemy.engine import make_url

    from sqlweave.catalog import Catalog, DatabaseEntry
    from sqlweave.server import ServerSettings, create_app

    bad = make_url(pg_server.url("postgres")).set(username="nobody").render_as_string(hide_password=False)
    settings = ServerSettings(Catalog({"x": DatabaseEntry("x", bad)}), llm=FakeLLM(), api_key="",
                              rate_limit_per_minute=0, conversation_url=f"sqlite:///{tmp_path / 'c.sqlite'}")
    try:
        with TestClient(create_app(settings), base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
            r = client.post("/api/sql", json={"database": "x", "sql": "SELECT 1"})
            assert r.status_code == 503 and r.json()["error"]["code"] == "database_unavailable"
            assert r.json()["error"]["retryable"] is False and "Retry-After" not in r.headers  # not by waiting
            assert "nobody" not in r.text  # the operator's side stays there
    finally:
        settings.catalog.close()


@pytest.mark.extra("server")
def test_the_http_api_answers_503_while_the_server_is_away_and_200_when_it_is_back(
        pg_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from fastapi.testclient import TestClient
    from sqlalchemy.engine import make_url

    from sqlweave.catalog import Catalog, DatabaseEntry
    from sqlweave.server import ServerSettings, create_app

    url = make_url(pg_url)
    proxy = Forwarder(url.host or "127.0.0.1", url.port or 5432)
    near = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    settings = ServerSettings(Catalog({"music": DatabaseEntry("music", near)}),
                              llm=FakeLLM(responder=lambda *_: "SELECT count(*) FROM singer"), api_key="",
                              rate_limit_per_minute=0, conversation_url=f"sqlite:///{tmp_path / 'c.sqlite'}")
    sql = {"database": "music", "sql": "SELECT count(*) FROM singer"}
    try:
        with TestClient(create_app(settings), base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
            assert client.post("/api/sql", json=sql).json()["rows"] == [[6]]
            assert client.get("/api/databases/music/schema").status_code == 200
            proxy.stop()
            r = client.post("/api/sql", json=sql)
            assert r.status_code == 503 and r.json()["error"]["code"] == "database_unavailable"  # was 500 internal
            assert r.json()["error"]["retryable"] is True and r.headers["Retry-After"] == "5"  # when to come back
            assert str(proxy.port) not in r.text and "127.0.0.1" not in r.text  # the operator's side stays there
            logged = [rec for rec in caplog.records if rec.getMessage() == "database_unavailable"]
            assert logged and "Connection refused" in logged[-1].driver  # what the driver said, for the operator
            answer = client.post("/api/ask", json={"database": "music", "question": "How many singers?"}).json()
            assert answer["error"]["code"] == "database_unavailable" and answer["timings"]["model_calls"] == 1
            assert answer["error"]["retryable"] is True
            proxy.start()
            assert client.post("/api/sql", json=sql).json()["rows"] == [[6]]
    finally:
        proxy.stop()
        settings.catalog.close()


def test_what_the_role_may_not_read_is_not_in_the_schema(pg_server: PostgresServer) -> None:
    pg_server.new_database("grants")
    pg_server.admin("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sqlweave_reader') THEN "
                    "CREATE ROLE sqlweave_reader LOGIN; END IF; END $$")
    pg_server.admin("CREATE TABLE staff (id int PRIMARY KEY, name text); INSERT INTO staff VALUES (1, 'Ada'); "
                    "CREATE TABLE pay (id int, staff_id int REFERENCES staff(id), salary int); "
                    "INSERT INTO pay VALUES (1, 1, 100); CREATE TABLE audit (who text); "
                    "CREATE VIEW names AS SELECT name FROM staff; "
                    "GRANT SELECT ON staff, names TO sqlweave_reader; GRANT SELECT (id, staff_id) ON pay TO sqlweave_reader",
                    "grants")
    url = pg_server.url("grants")
    reader = url.replace("://postgres@", "://sqlweave_reader@")
    assert reader != url
    with Database.open(reader) as db:
        s = db.schema()
        assert sorted(s.table_names) == ["names", "pay", "staff"]  # no privilege on audit at all
        assert [c.name for c in s.table("pay").columns] == ["id", "staff_id"]  # salary is not granted
        assert s.table("pay").row_count == 1 and [str(fk) for fk in s.foreign_keys] == ["pay.staff_id -> staff.id"]
        assert db.execute("SELECT s.name FROM pay p JOIN staff s ON p.staff_id = s.id").rows == (("Ada",),)
    with Database.open(url) as db:  # the owner reads everything
        assert sorted(db.schema().table_names) == ["audit", "names", "pay", "staff"]
        assert [c.name for c in db.schema().table("pay").columns] == ["id", "staff_id", "salary"]


def test_a_search_path_without_tables_names_the_schemas_that_have_them(pg_server: PostgresServer) -> None:
    pg_server.new_database("marts_only")
    pg_server.admin("CREATE SCHEMA marts; CREATE TABLE marts.kpi (x int)", "marts_only")
    with Database.open(pg_server.url("marts_only")) as db, \
            pytest.raises(SchemaError, match=r"no tables in public; its tables are in marts \(1 table\)") as err:
        db.schema()
    assert "--schemas marts" in (err.value.hint or "")
    engine = sqlweave.connect(pg_server.url("marts_only"), schemas="marts", llm=FakeLLM(["SELECT count(*) FROM kpi"]))
    assert engine.ask("How many KPIs are there?").result.rows == ((0,),)
    engine.close()


def test_a_large_fact_table_gets_its_keys_from_a_sample_of_its_blocks(pg_server: PostgresServer) -> None:
    from sqlweave.db.infer_keys import infer_database_keys

    pg_server.new_database("warehouse")
    pg_server.admin("CREATE TABLE stores AS SELECT i AS store_id, 'store ' || i AS name FROM generate_series(1, 50) i; "
                    "CREATE TABLE sales AS SELECT i AS id, 1 + i % 50 AS store_id, i % 7 AS amount "
                    "FROM generate_series(0, 299999) i; ANALYZE", "warehouse")
    with Database.open(pg_server.url("warehouse"), keys_from_data=False) as db:
        tables = db.schema().tables
        keys = infer_database_keys(db, tables, max_rows=100_000, sample_rows=5_000)
        assert keys.foreign == [("sales", "store_id", "stores", "store_id")]
        assert keys.primary == {"stores": "store_id"}  # no key looked for among the 300,000 rows
        assert infer_database_keys(db, tables, max_rows=100_000, sample_rows=5_000) == keys  # the same blocks


def test_the_loader_takes_a_url_without_a_driver_as_open_does(pg_server: PostgresServer) -> None:
    pg_server.new_database("plain_url")
    url = pg_server.url("plain_url").replace("postgresql+psycopg://", "postgresql://")
    assert url.startswith("postgresql://")  # SQLAlchemy's default driver (psycopg2) is not installed
    report = load_database(SINGER, url)
    assert "singer" in report.tables
    with Database.open(url) as db:
        assert db.execute("SELECT count(*) FROM singer").rows == ((6,),)


def test_mixed_case_names_are_quoted_for_postgres(pg_server: PostgresServer) -> None:
    pg_server.new_database("singer_case")
    report = load_database(SINGER, pg_server.url("singer_case"), lower_names=False)
    assert "singer_in_concert" in report.tables
    db = Database.open(pg_server.url("singer_case"))
    s = db.schema()
    assert s.table("singer").primary_key == ("Singer_ID",)
    r = db.execute("SELECT Name FROM singer WHERE Singer_ID = 1")
    assert r.rows == (("Joe Sharp",),) and r.sql == 'SELECT "Name" FROM singer WHERE "Singer_ID" = 1'
    engine = sqlweave.connect(pg_server.url("singer_case"), llm=FakeLLM(["SELECT count(*) FROM Singer WHERE Age > 30"]))
    assert engine.ask("How many singers are older than 30?").result.rows == ((4,),)
    db.close()
    engine.close()


# --- read-only, proved with a role that could write -----------------------------------------------------


def _counts(pg_server: PostgresServer) -> dict[str, int]:
    counts = {t: pg_server.admin(f"SELECT count(*) FROM {t}", "concert_singer")[0][0] for t in TABLES}
    counts["ticket_seq"] = pg_server.admin("SELECT last_value FROM ticket_seq", "concert_singer")[0][0]
    counts["tables"] = pg_server.admin("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", "concert_singer")[0][0]
    counts["large objects"] = pg_server.admin("SELECT count(*) FROM pg_largeobject_metadata", "concert_singer")[0][0]
    return counts


def test_the_connection_role_could_write(pg_server: PostgresServer, db: Database) -> None:
    assert db.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").rows == ((True,),)


@pytest.mark.parametrize("sql", PG_ATTACKS)
def test_every_destructive_statement_is_refused(pg_server: PostgresServer, db: Database, sql: str) -> None:
    before = _counts(pg_server)
    with pytest.raises((RefusedStatementError, SQLParseError)):
        db.execute(sql)
    assert _counts(pg_server) == before
    assert db.execute("SELECT count(*) FROM singer").rows == ((6,),)


@pytest.mark.parametrize("sql", PG_WRITES_STOPPED_BY_THE_SERVER)
def test_past_the_classifier_writes_fail_inside_the_read_only_transaction(pg_server: PostgresServer, db: Database,
                                                                          sql: str) -> None:
    before = _counts(pg_server)
    with pytest.raises(ExecutionError, match="read-only transaction|multiple commands|transaction block"):
        db.trusted_read(sql, timeout_s=5, max_rows=10)
    assert _counts(pg_server) == before
    assert db.execute("SELECT count(*) FROM singer").rows == ((6,),)


def test_statement_timeout_stops_a_runaway_query(pg_url: str) -> None:
    """The server itself stops the query at the limit (SQLSTATE 57014, "canceling statement due to statement
    timeout"), long before it would end. The wall-clock bound is loose on purpose: on a shared 2-core machine the
    round trips around a 1 s statement have taken up to 5.5 s in CI, while a quiet machine stops it in 1.0 s."""
    db = Database.open(pg_url, timeout_s=1)
    db.execute("SELECT 1")  # the connection is open before the clock starts
    for run in (lambda: db.execute("SELECT count(*) FROM (SELECT generate_series(1, 1000000000)) AS a"),  # ~1 min
                lambda: db.trusted_read("SELECT pg_sleep(30)", timeout_s=1, max_rows=1)):  # past the classifier
        start = time.perf_counter()
        with pytest.raises(QueryTimeoutError) as err:
            run()
        assert time.perf_counter() - start < 15.0
        assert getattr(err.value.__cause__.orig, "sqlstate", None) == "57014"  # the server's statement timeout
    assert db.execute("SELECT count(*) FROM singer").rows == ((6,),)
    db.close()


def test_a_url_without_the_driver_names_the_extra(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    if importlib.util.find_spec("psycopg2") is None:
        # postgresql:// (SQLAlchemy's default driver is psycopg2) works with the postgres extra's psycopg.
        plain = Database.open(pg_url.replace("postgresql+psycopg://", "postgresql://"))
        assert plain.engine.url.drivername == "postgresql+psycopg" and plain.execute("SELECT 1").rows == ((1,),)
        plain.close()
    with pytest.raises(MissingDependencyError) as info:
        Database.open(pg_url.replace("postgresql+psycopg://", "postgresql+pg8000://"))
    assert "pip install" in info.value.hint and "sqlweave[postgres]" in info.value.hint
    from sqlweave.db.backends import postgres

    monkeypatch.setattr(postgres, "importable", lambda name: False)
    with pytest.raises(MissingDependencyError) as info:
        Database.open(pg_url.replace("postgresql+psycopg://", "postgresql://"))
    assert info.value.hint == "Install it with: pip install 'sqlweave[postgres]'"


def test_transpiled_sql_is_the_dialects_own(db: Database) -> None:
    assert to_dialect("SELECT count(*) FROM singer", db.dialect) == "SELECT count(*) FROM singer"
    sql = to_dialect("SELECT `Name` FROM singer LIMIT 2, 2", db.dialect)
    assert db.execute(sql).row_count == 2


def test_a_schema_kept_on_disk_is_read_again_when_rows_or_grants_change(pg_server: PostgresServer,
                                                                        reads: list[str]) -> None:
    pg_server.new_database("kept")
    pg_server.admin("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sqlweave_reader') THEN "
                    "CREATE ROLE sqlweave_reader LOGIN; END IF; END $$")
    pg_server.admin("CREATE TABLE staff (id int PRIMARY KEY, name text, salary int); "
                    "INSERT INTO staff VALUES (1, 'Ada', 10); GRANT SELECT (id, name) ON staff TO sqlweave_reader", "kept")
    url = pg_server.url("kept")
    reader = url.replace("://postgres@", "://sqlweave_reader@")

    def read(target: str):  # type: ignore[no-untyped-def]
        with Database.open(target) as db:
            return db.schema()

    assert read(url).table("staff").row_count == 1 and read(url).table("staff").row_count == 1
    assert reads == ["kept"]  # the second read came from disk
    assert read(reader).table("staff").column_names == ("id", "name") and len(reads) == 2  # another user's read
    pg_server.admin("INSERT INTO staff VALUES (2, 'Bo', 20)", "kept")  # the writer's session ends: reported
    assert read(url).table("staff").row_count == 2 and len(reads) == 3
    pg_server.admin("GRANT SELECT (salary) ON staff TO sqlweave_reader", "kept")
    assert read(reader).table("staff").column_names == ("id", "name", "salary")
    pg_server.admin("COMMENT ON COLUMN staff.name IS 'full name'", "kept")
    assert read(url).table("staff").column("name").description == "full name"
    assert len(reads) == 5


def test_a_schema_is_read_on_one_connection(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each connection taken from the pool costs a round trip (the check that it is alive): a schema read, hundreds
    # of queries, takes one; each query still runs in its own read-only transaction with its own time limit.
    import sqlalchemy as sa

    monkeypatch.setenv("SQLWEAVE_SCHEMA_CACHE", "0")
    db = Database.open(pg_url)
    checkouts: list[object] = []
    sa.event.listen(db.engine, "checkout", lambda *args: checkouts.append(args))
    schema = db.schema()
    assert len(checkouts) == 1 and len(schema.tables) == 4 and schema.table("singer").row_count == 6
    with db.one_connection():
        assert db.trusted_read("SHOW transaction_read_only").rows == (("on",),)
        assert db.trusted_read("SHOW statement_timeout", timeout_s=2.5).rows == (("2500ms",),)
        with pytest.raises(QueryTimeoutError):
            db.trusted_read("SELECT pg_sleep(2)", timeout_s=0.2)
        assert db.trusted_read("SELECT 1").rows == ((1,),)  # the connection is usable after the timeout
    assert len(checkouts) == 2  # the schema's, and the block's
    db.close()


def test_sample_values_of_a_wide_table_are_read_together_as_each_column_alone_reads_them(
        pg_server: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlweave.db.introspect import _samples_sql, _short

    monkeypatch.setenv("SQLWEAVE_SCHEMA_CACHE", "0")
    pg_server.new_database("wide")
    many = ", ".join(f"n{i} int" for i in range(60))
    pg_server.admin("CREATE TYPE mood AS ENUM ('sad', 'ok'); "
                    f"CREATE TABLE w (id int, name text, price numeric(6,2), m mood, doc json, tags text[], {many}); "
                    "INSERT INTO w SELECT g, 'n' || g, g / 4.0, CASE WHEN g % 2 = 0 THEN 'ok' ELSE 'sad' END::mood, "
                    "'{\"a\": 1}', ARRAY['x', 'y' || g], " + ", ".join(f"g * {i}" for i in range(60)) +
                    " FROM generate_series(1, 40) AS g", "wide")
    with Database.open(pg_server.url("wide")) as db:
        sent: list[str] = []
        real = db.trusted_read
        monkeypatch.setattr(db, "trusted_read", lambda sql, **kw: sent.append(sql) or real(sql, **kw))
        table = db.schema().table("w")
        alone = {c.name: tuple(r[0] for r in real(_samples_sql(db, "w", c.name)).rows) for c in table.columns
                 if c.name != "doc"}
    assert table.row_count == 40 and len(table.columns) == 66
    for col in table.columns:
        if col.name != "doc":  # json has no equality: no samples, read together or alone
            assert col.samples == tuple(_short(v, postgres=True) for v in alone[col.name]), col.name
    assert table.column("price").samples and table.column("m").samples and table.column("tags").samples
    assert not table.column("doc").samples
    per_column = [s for s in sent if s.startswith("SELECT DISTINCT")]
    assert len(per_column) == 3  # the enum (unknown to the driver), the array, and json (found by halving)
    together = [s for s in sent if "array_agg" in s]
    assert len(together) < 20 and not any(s.startswith('SELECT COUNT(*) FROM "w"') for s in sent)  # counted with them


def test_a_schema_of_many_tables_costs_few_statements_a_table(pg_server: PostgresServer,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # Columns, keys and comments of all tables by one query of each kind; a table's count and samples by one
    # query, its first rows by one, its statistics by one; each in its own read-only transaction (one statement).
    import sqlalchemy as sa

    monkeypatch.setenv("SQLWEAVE_SCHEMA_CACHE", "0")
    pg_server.new_database("many")
    pg_server.admin("; ".join(f"CREATE TABLE t{i} (id int PRIMARY KEY, name text, ref int REFERENCES t0(id)); "
                              f"COMMENT ON TABLE t{i} IS 'table {i}'; INSERT INTO t{i} VALUES (0, 'n{i}', 0)"
                              for i in range(30)), "many")
    with Database.open(pg_server.url("many")) as db:
        statements: list[str] = []
        sa.event.listen(db.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
        schema = db.schema()
    assert len(schema.tables) == 30 and schema.table("t7").description == "table 7"
    assert schema.table("t7").primary_key == ("id",) and "t7.ref -> t0.id" in {str(f) for f in schema.foreign_keys}
    assert schema.table("t7").column("name").samples == ("n7",) and schema.table("t7").row_count == 1
    assert len(statements) <= 7 * 30, len(statements)


def test_a_table_too_slow_to_count_costs_two_interrupted_queries(pg_server: PostgresServer,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SQLWEAVE_SCHEMA_CACHE", "0")
    pg_server.new_database("slow")
    cols = ", ".join(f"g AS c{i}" for i in range(8))
    pg_server.admin("CREATE TABLE fast (id int); INSERT INTO fast VALUES (1); "
                    f"CREATE VIEW crawl AS SELECT {cols} FROM generate_series(1, 100000) AS g "
                    "WHERE pg_sleep(0.001)::text = ''", "slow")
    with Database.open(pg_server.url("slow"), timeout_s=0.3) as db:
        schema = db.schema()
        assert schema.table("crawl").row_count is None and schema.table("fast").row_count == 1
        assert db.reads_cut_short == 2  # samples with the count, then the count alone: no halving of a slow read


def test_a_server_handle_reads_the_schema_again_when_a_column_is_added_not_when_rows_are(
        pg_server: PostgresServer) -> None:
    pg_server.new_database("living")
    pg_server.admin("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)", "living")
    from sqlweave.stages.select_values import value_index

    with Database.open(pg_server.url("living")) as db:
        first = db.schema()
        assert len(value_index(db)) == 0  # no text column yet
        db.recheck_s = 0
        pg_server.admin("INSERT INTO t VALUES (2)", "living")
        assert db.schema() is first
        pg_server.admin("ALTER TABLE t ADD COLUMN label text; CREATE TABLE u (x int); "
                        "UPDATE t SET label = 'Zebra crossing' WHERE id = 2", "living")
        assert db.schema().table("t").column_names == ("id", "label") and "u" in db.schema().table_names
        assert value_index(db).search("zebra", k=1)[0].value == "Zebra crossing"  # the value index follows
        pg_server.admin("COMMENT ON TABLE u IS 'units'", "living")
        assert db.schema().table("u").description == "units"


PG_TYPES = ("SELECT ARRAY['a', 'b c'] AS tags, ARRAY[1.50, NULL]::numeric[] AS prices, "
            "'{\"k\": [1, 2]}'::jsonb AS doc, 12345678901234567.89::numeric AS big, -3.25::numeric AS loss, "
            "interval '1 day 2 hours' AS took, 'NaN'::float8 AS ratio, '\\xdead'::bytea AS b, "
            "'00000000-0000-0000-0000-000000000001'::uuid AS id, timestamptz '2024-01-02 03:04:05+00' AS at, "
            "'10.0.0.1'::inet AS ip, int4range(1, 5) AS r")
PG_JSON = {"tags": ["a", "b c"], "prices": [1.5, None], "doc": {"k": [1, 2]}, "big": "12345678901234567.89",
           "loss": -3.25, "took": "P1DT2H", "ratio": "NaN", "b": "X'dead'", "id": "00000000-0000-0000-0000-000000000001",
           "at": "2024-01-02T03:04:05+00:00", "ip": "10.0.0.1", "r": "[1, 5)"}


def test_postgresql_values_are_written_the_same_way_at_every_door(pg_url: str, tmp_path: Path) -> None:
    """Arrays, jsonb, exact numerics, intervals, bytea and NaN: one form for JSON doors, one for text doors."""
    import csv
    import io
    import json

    from typer.testing import CliRunner

    from sqlweave.catalog import Catalog, DatabaseEntry
    from sqlweave.cli import app
    from sqlweave.mcp import SqlweaveTools

    from ..test_cells import need_doors, server_row_is

    need_doors()
    r = CliRunner().invoke(app, ["sql", "--db", pg_url, "--json", PG_TYPES])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout, parse_constant=lambda name: pytest.fail(f"bare {name} is not JSON"))
    assert dict(zip(out["columns"], out["rows"][0])) == PG_JSON  # was NaN (no JSON), "1 day, 2:00:00", "dead"

    r = CliRunner().invoke(app, ["sql", "--db", pg_url, "--csv", PG_TYPES])
    header, row = list(csv.reader(io.StringIO(r.stdout)))
    shown = dict(zip(header, row))
    assert (shown["tags"], shown["prices"], shown["loss"], shown["took"]) == \
        ('["a", "b c"]', "[1.5, null]", "-3.25", "P1DT2H")  # was ['a', 'b c'], [Decimal('1.50'), None], '-3.25

    catalog = Catalog({"pg": DatabaseEntry("pg", pg_url)})
    try:
        got = SqlweaveTools(catalog, FakeLLM([])).run_sql("pg", PG_TYPES)
        assert dict(zip(got.columns, got.rows[0])) == PG_JSON
        server_row_is(catalog, "pg", PG_TYPES, PG_JSON, tmp_path)
    finally:
        catalog.close()


def test_numbers_inside_json_are_compared_as_numbers(pg_server: PostgresServer) -> None:
    """``doc ->> 'watts' > '100'`` ran and compared text ('9' > '100'); ``> 100`` and ``SUM`` failed on text."""
    pg_server.new_database("json_numbers")
    pg_server.admin("CREATE TABLE gadget (name text, specs jsonb); INSERT INTO gadget VALUES "
                    "('Lamp', '{\"watts\": 9}'), ('Drill', '{\"watts\": 650}'), ('Dial', '{\"watts\": \"n/a\"}'), "
                    "('Box', '{}')", "json_numbers")
    with Database.open(pg_server.url("json_numbers")) as db:
        assert db.execute("SELECT name FROM gadget WHERE specs->>'watts' > '100'").rows == (("Drill",),)
        assert db.execute("SELECT name FROM gadget WHERE specs->>'watts' > 100").rows == (("Drill",),)
        assert db.execute("SELECT name FROM gadget WHERE specs #>> '{watts}' BETWEEN '5' AND '10'").rows == \
            (("Lamp",),)
        assert db.execute("SELECT SUM(specs->>'watts') FROM gadget").rows == ((659,),)  # "n/a" and none skipped
        assert db.execute("SELECT name FROM gadget WHERE specs->>'watts' = 'n/a'").rows == (("Dial",),)  # as written


def test_tenants_handles_run_queries_side_by_side(pg_url: str) -> None:
    # one lock per pooled connection, not per database: four queries of 0.4 s through two tenants' handles end
    # together, where one lock for the database (every bound handle's) would take 1.6 s
    import threading

    from sqlweave.policy import AccessPolicy

    db = Database.open(pg_url, policy=AccessPolicy.from_yaml("row_filters: {singer: 'age > :min_age'}"))
    tenants = [db.bind({"min_age": 20}), db.bind({"min_age": 40})]
    for t in tenants:
        t.trusted_read("SELECT 1")  # connections made
    start = threading.Barrier(5)

    def sleep(i: int) -> None:
        start.wait()
        tenants[i % 2].trusted_read("SELECT pg_sleep(0.4)")

    threads = [threading.Thread(target=sleep, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    start.wait()
    began = time.perf_counter()
    for t in threads:
        t.join()
    assert time.perf_counter() - began < 1.2
    db.close()
