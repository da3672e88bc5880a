"""sqlweave on real DuckDB files, made from Spider's concert_singer by sqlweave's loader."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

import sqlweave
from sqlweave.database import Database
from sqlweave.loading import load_database
from sqlweave.errors import ConfigurationError, ExecutionError, QueryTimeoutError, RefusedStatementError, SchemaError, SQLParseError
from sqlweave.llm import FakeLLM

from ..conftest import file_digest
from ..extras import duckdb_file
from .conftest import NAME_COMMENT, SINGER, TABLE_COMMENT
from .suite import (
    DIALECT_CASES,
    DUCKDB_ATTACKS,
    MANY_ROW_CASES,
    TEXT_NUMBER_CASES,
    check_concert_singer_schema,
    check_tools_and_repair,
    rows,
    run_as_model_wrote_it,
)

pytestmark = pytest.mark.extra("duckdb")


@pytest.fixture(scope="module")
def db(duck_path: Path) -> Database:
    handle = Database.open(duck_path)
    yield handle
    handle.close()


def test_loader_keeps_keys_types_and_reports_changes(tmp_path: Path) -> None:
    report = load_database(SINGER, tmp_path / "cs.duckdb")
    assert report.tables == {"stadium": 9, "singer": 6, "concert": 6, "singer_in_concert": 10}
    assert "concert(Stadium_ID) -> stadium(Stadium_ID)" in report.foreign_keys
    assert "concert.Year: whole numbers stored as text, stored as integers" in report.notes
    s = Database.open(tmp_path / "cs.duckdb").schema()
    assert s.table("concert").column("Stadium_ID").is_numeric


def test_introspection_reads_keys_comments_samples_and_statistics(db: Database) -> None:
    assert db.dialect == "duckdb" and db.name == "concert_singer"
    check_concert_singer_schema(db, NAME_COMMENT, TABLE_COMMENT)


def test_execute_value_index_tools_and_repair(db: Database) -> None:
    assert db.execute("SELECT name, age FROM singer ORDER BY age DESC").rows[0] == ("Joe Sharp", 52)
    with pytest.raises(ExecutionError):
        db.execute("SELECT nme FROM singer")
    check_tools_and_repair(db)


def test_default_pipeline_answers_how_many_singers(duck_path: Path) -> None:
    engine = sqlweave.connect(duck_path, llm=FakeLLM(["```sql\nSELECT count(*) FROM singer;\n```"]), pipeline="default")
    answer = engine.ask("How many singers are there?")
    assert answer.result.rows == ((6,),) and answer.sql == "SELECT count(*) FROM singer"
    assert "DuckDB" in answer.trace[2].calls[0].messages[0].content
    engine.close()


def test_default_pipeline_transpiles_sqlite_sql(duck_path: Path) -> None:
    engine = sqlweave.connect(duck_path, llm=FakeLLM([
        "SELECT `Name` FROM singer WHERE CAST(strftime('%Y', '2014-05-01') AS INTEGER) = 2014 ORDER BY Age DESC LIMIT 0, 1"]))
    answer = engine.ask("Who is the oldest singer?")
    assert answer.result.rows == (("Joe Sharp",),) and "`" not in answer.sql
    engine.close()


@pytest.fixture(scope="module")
def duck_events(events_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Database:
    path = tmp_path_factory.mktemp("duck-events") / "events.duckdb"
    load_database(events_db, path)
    handle = Database.open(path)
    yield handle
    handle.close()


@pytest.mark.parametrize("sql,expected_sql", DIALECT_CASES)
def test_sqlite_dialect_sql_gives_sqlite_answers(duck_events: Database, events_db: Path, sql: str,
                                                 expected_sql: str | None) -> None:
    with Database.open(events_db) as reference:
        expected = rows(reference.execute(expected_sql or sql))
    ran, got = run_as_model_wrote_it(duck_events, sql)
    assert got == expected, f"ran on DuckDB: {ran}"


@pytest.mark.parametrize("sql,meant", TEXT_NUMBER_CASES + MANY_ROW_CASES)
def test_numbers_kept_as_text_and_subqueries_of_several_rows_mean_what_they_say(
        duck_events: Database, events_db: Path, sql: str, meant: str) -> None:
    with Database.open(events_db) as reference:
        expected = rows(reference.execute(meant))
        assert rows(reference.execute(sql)) != expected  # SQLite's own reading differs, and stays SQLite's
    ran, got = run_as_model_wrote_it(duck_events, sql)
    assert got == expected, f"ran on DuckDB: {ran}"


def test_a_subquery_of_several_rows_runs_as_a_set_and_says_so(duck_events: Database) -> None:
    from sqlweave.policy import AccessPolicy

    sql = "SELECT name FROM event WHERE city = (SELECT city FROM event WHERE price > 6) ORDER BY id"
    result = duck_events.execute(sql)
    assert result.sql == "SELECT name FROM event WHERE city IN (SELECT city FROM event WHERE price > 6) ORDER BY id"
    assert len(result.rows) == 3
    with pytest.raises(ExecutionError, match="More than one row"):  # no set answers '>': the error stands
        duck_events.execute("SELECT name FROM event WHERE price > (SELECT price FROM event WHERE price > 6)")
    # under an access policy the row filter holds in the query run again, and the result shows the caller's form
    policy = AccessPolicy.from_mapping({"row_filters": {"event": "id <> 3"}})
    with Database.open(duck_events.target, policy=policy) as guarded:
        result = guarded.execute(sql)
        assert result.sql == "SELECT name FROM event WHERE city IN (SELECT city FROM event WHERE price > 6) ORDER BY id"
        assert [r[0] for r in result.rows] == ["Spring Gala", "summer fair"]


@pytest.mark.parametrize("sql,expected_sql", DIALECT_CASES)
def test_sqlite_answers_are_untouched_on_sqlite(events_db: Path, sql: str, expected_sql: str | None) -> None:
    with Database.open(events_db) as db:
        ran, got = run_as_model_wrote_it(db, expected_sql or sql)
        assert ran == (expected_sql or sql) and got == rows(db.execute(expected_sql or sql))


@pytest.mark.parametrize("sql", DUCKDB_ATTACKS)
def test_file_access_extensions_and_writes_are_refused_and_the_file_is_unchanged(duck_path: Path, tmp_path: Path,
                                                                                 sql: str) -> None:
    path = tmp_path / "copy.duckdb"
    shutil.copy(duck_path, path)
    before = file_digest(path)
    db = Database.open(path)
    with pytest.raises((RefusedStatementError, SQLParseError)):
        db.execute(sql)
    # Past the classifier, the handle itself is read-only and has no access outside its file (what still runs
    # there only reads or sets this session: glob of paths, an environment variable, profiling, a checkpoint).
    try:
        db.trusted_read(sql, timeout_s=5, max_rows=10)
    except (ExecutionError, QueryTimeoutError):
        pass
    else:
        assert sql.startswith(("SELECT * FROM glob", "SELECT getenv", "PRAGMA", "CALL pragma_version", "CHECKPOINT",
                               "SET threads", "SELECT * FROM query(")), f"ran past the guard: {sql}"
    assert db.execute("SELECT count(*) FROM singer").rows == ((6,),)
    db.close()
    assert file_digest(path) == before
    assert not list(Path("/tmp").glob("sqlweave-out*")) and not Path("/tmp/sqlweave-export").exists()


def test_runaway_query_is_interrupted(duck_path: Path) -> None:
    db = Database.open(duck_path, timeout_s=0.5)
    start = time.perf_counter()
    with pytest.raises(QueryTimeoutError):
        db.execute("SELECT count(*) FROM range(100000000) a, range(100000000) b")
    assert time.perf_counter() - start < 3
    assert db.execute("SELECT count(*) FROM singer").rows == ((6,),)
    db.close()


# --- schemas -----------------------------------------------------------------------------------------------


def _schemas_file(path: Path) -> Path:
    """A DuckDB file with tables in main, in sales and in a schema whose name needs quotes; ``orders`` is in both
    main and sales, and sales' orders refers to its customers."""
    import duckdb

    con = duckdb.connect(str(path))
    con.execute('CREATE SCHEMA sales; CREATE SCHEMA "Hr Dept"; '
                "CREATE TABLE main.orders (note VARCHAR); INSERT INTO main.orders VALUES ('archived'); "
                "CREATE TABLE sales.customers (id INTEGER PRIMARY KEY, name VARCHAR); "
                "CREATE TABLE sales.orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES sales.customers(id), "
                "total DOUBLE); "
                "INSERT INTO sales.customers VALUES (1, 'Ada'), (2, 'Bo'); "
                "INSERT INTO sales.orders VALUES (10, 1, 5.0), (11, 1, 7.5), (12, 2, 1.0); "
                'CREATE TABLE "Hr Dept".staff (id INTEGER PRIMARY KEY, name VARCHAR); '
                "INSERT INTO \"Hr Dept\".staff VALUES (1, 'Cy')")
    con.close()
    return path


def test_every_schema_of_a_file_is_read_main_first_and_its_tables_answer(tmp_path: Path) -> None:
    with Database.open(_schemas_file(tmp_path / "s.duckdb")) as db:
        s = db.schema()
        assert s.schemas == ("main", "Hr Dept", "sales")
        assert sorted(s.table_names) == ["customers", "orders", "staff"]
        assert [c.name for c in s.table("orders").columns] == ["note"]  # main's orders hides sales' orders
        assert s.shadowed == ("sales.orders",)
        assert s.foreign_keys == ()  # sales' key is on the orders not read
        assert db.execute("SELECT name FROM staff").rows == (("Cy",),)
        assert db.execute("SELECT count(*) FROM customers").rows == ((2,),)
    path = tmp_path / "s.duckdb"
    import duckdb

    con = duckdb.connect(str(path))  # main gets a customers of its own: sales.invoices' key refers to none read
    con.execute("CREATE TABLE main.customers (code VARCHAR); CREATE TABLE sales.invoices (id INTEGER, "
                "customer_id INTEGER REFERENCES sales.customers(id))")
    con.close()
    with Database.open(path) as db:
        assert [c.name for c in db.schema().table("customers").columns] == ["code"]
        assert db.schema().foreign_keys == ()
    with Database.open(path, schemas=["sales"]) as db:
        assert sorted(str(fk) for fk in db.schema().foreign_keys) == [
            "invoices.customer_id -> customers.id", "orders.customer_id -> customers.id"]


def test_the_schemas_named_are_read_in_their_order(tmp_path: Path) -> None:
    with Database.open(_schemas_file(tmp_path / "s.duckdb"), schemas=["sales", "main"]) as db:
        s = db.schema()
        assert s.schemas == ("sales", "main")
        assert [c.name for c in s.table("orders").columns] == ["id", "customer_id", "total"]
        assert s.table("customers").primary_key == ("id",)
        assert s.shadowed == ("main.orders",)
        assert [str(fk) for fk in s.foreign_keys] == ["orders.customer_id -> customers.id"]
        assert db.execute("SELECT c.name, sum(o.total) FROM orders o JOIN customers c ON o.customer_id = c.id "
                          "GROUP BY 1 ORDER BY 1").rows == (("Ada", 12.5), ("Bo", 1.0))
        with pytest.raises(RefusedStatementError):  # a query cannot move the search path
            db.execute("SET search_path = 'main'")
        assert db.execute("SELECT count(*) FROM orders").rows == ((3,),)


def test_a_table_an_earlier_schema_hides_is_named_as_sql_names_it_and_kept_with_the_schema(tmp_path: Path) -> None:
    from sqlweave.policy import AccessPolicy

    path = duckdb_file(_schemas_file(tmp_path / "s.duckdb"),
                       'CREATE TABLE main.staff (note VARCHAR); CREATE TABLE "Hr Dept".customers (x INTEGER)')
    with Database.open(path) as db:
        assert db.schema().shadowed == ('"Hr Dept".staff', "sales.customers", "sales.orders")
    with Database.open(path) as db:  # read back from the schema kept on disk
        assert db.schema().shadowed == ('"Hr Dept".staff', "sales.customers", "sales.orders")
        assert db.schema_kept_since is not None
    policy = AccessPolicy.from_mapping({"hidden_tables": ["customers"]})
    with Database.open(path, policy=policy) as db:  # what the policy hides is not named either
        assert db.schema().shadowed == ('"Hr Dept".staff', "sales.orders")
    with Database.open(path, schemas=["sales"]) as db:
        assert db.schema().shadowed == ()


def test_a_schema_the_file_lacks_or_one_without_tables_is_a_clear_error(tmp_path: Path) -> None:
    path = _schemas_file(tmp_path / "s.duckdb")
    with pytest.raises(SchemaError, match="has no schema 'salez'") as err:
        Database.open(path, schemas=["salez"])
    assert "sales (2 tables)" in (err.value.hint or "") and "Hr Dept (1 table)" in (err.value.hint or "")
    import duckdb

    con = duckdb.connect(str(tmp_path / "only.duckdb"))
    con.execute("CREATE SCHEMA empty; CREATE SCHEMA marts; CREATE TABLE marts.kpi (x INTEGER)")
    con.close()
    with Database.open(tmp_path / "only.duckdb", schemas=["empty"]) as db, \
            pytest.raises(SchemaError, match=r"no tables in empty; its tables are in marts \(1 table\)") as err:
        db.schema()
    assert "--schemas marts" in (err.value.hint or "")
    with pytest.raises(ConfigurationError, match="schemas must be names"):
        Database.open(path, schemas=["sales", " "])
    with Database.open(tmp_path / "only.duckdb") as db:  # by default: the one schema with tables
        assert db.schema().table_names == ("kpi",) and db.execute("SELECT count(*) FROM kpi").rows == ((0,),)


def test_a_large_fact_table_gets_its_keys_from_a_sample_of_its_rows(tmp_path: Path) -> None:
    import duckdb

    from sqlweave.db.infer_keys import infer_database_keys

    path = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE stores AS SELECT i AS store_id, 'store ' || i AS name FROM range(1, 51) t(i); "
                "CREATE TABLE sales AS SELECT i AS id, 1 + i % 50 AS store_id, i % 7 AS amount "
                "FROM range(300000) t(i)")
    con.close()
    with Database.open(path, keys_from_data=False) as db:
        tables = db.schema().tables
        keys = infer_database_keys(db, tables, max_rows=100_000, sample_rows=5_000)
        assert keys.foreign == [("sales", "store_id", "stores", "store_id")]
        assert keys.primary == {"stores": "store_id"}  # no key looked for among the 300,000 rows
        assert infer_database_keys(db, tables, max_rows=100_000, sample_rows=5_000) == keys  # the same sample
    with Database.open(path) as db:  # under the default million rows, every row is read
        assert [str(fk) for fk in db.schema().foreign_keys] == ["sales.store_id -> stores.store_id"]
        assert db.schema().table("sales").primary_key == ("id",)


def test_sample_values_and_indexed_values_are_the_first_to_appear_as_on_sqlite(tmp_path: Path) -> None:
    # DuckDB's DISTINCT runs on several threads and gives its values in another order in each process: the
    # prompt's samples (and the value index of a column with too many values) changed from one run to the next
    import sqlite3

    import duckdb

    from sqlweave.retrieval.values import ValueIndex

    rows = [(f"city {i * 7919 % 50_000}", i % 3 or None) for i in range(200_000)]
    con = sqlite3.connect(tmp_path / "t.sqlite")
    con.execute("CREATE TABLE t (city VARCHAR, n INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", rows)
    con.commit()
    con.close()
    duck = duckdb.connect(str(tmp_path / "t.duckdb"))
    duck.execute("CREATE TABLE t AS SELECT 'city ' || (i * 7919 % 50000) AS city, CAST(NULLIF(i % 3, 0) AS INTEGER) AS n "
                 "FROM range(200000) AS r(i)")
    duck.close()
    first: list[str] = []
    for city, _ in rows:
        if city not in first:
            first.append(city)
        if len(first) == 40:
            break
    schemas, indexed = [], []
    for path in (tmp_path / "t.duckdb", tmp_path / "t.sqlite"):
        with Database.open(path, keys_from_data=False) as db:
            cols = {c.name: c for c in db.schema(refresh=True).table("t").columns}
            schemas.append((cols["city"].samples, cols["n"].samples))
            index = ValueIndex.build(db, max_per_column=40, persist=False)
            indexed.append(sorted(v for _, _, v in index.entries))
    assert schemas[0] == schemas[1] == (tuple(first[:3]), (1, 2))
    assert indexed[0] == indexed[1] == sorted(first)


def test_a_file_another_program_writes_is_a_clear_error_that_says_so(tmp_path: Path) -> None:
    import subprocess
    import sys

    import duckdb

    from sqlweave.errors import DatabaseUnavailableError

    path = tmp_path / "busy.duckdb"
    duckdb.connect(str(path)).close()
    writer = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('open', flush=True); time.sleep(60)", str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "open"
        with pytest.raises(DatabaseUnavailableError, match="lock") as err:
            Database.open(path)
        assert "Another program has the file open for writing" in (err.value.hint or "")
    finally:
        writer.kill()
        writer.communicate()  # waits, and closes its pipe
    with Database.open(path) as db:  # once it is closed, the file opens
        assert db.backend == "duckdb"


def test_lists_structs_and_enums_read_as_duckdb_names_them(tmp_path: Path) -> None:
    import warnings

    import duckdb

    path = tmp_path / "types.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TYPE mood AS ENUM ('sad', 'ok'); CREATE TABLE p (id INTEGER, m mood, tags VARCHAR[], "
                "s STRUCT(name VARCHAR)); INSERT INTO p VALUES (1, 'ok', ['a'], {'name': 'x'})")
    con.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the driver's "did not recognize type" is not shown to the user
        with Database.open(path) as db:
            cols = {c.name: c for c in db.schema().table("p").columns}
            assert {n: c.type for n, c in cols.items()} == {"id": "INTEGER", "m": "ENUM", "tags": "VARCHAR[]",
                                                            "s": "STRUCT(\"name\" VARCHAR)"}
            assert cols["m"].is_text and cols["m"].description == "one of 'sad', 'ok'"
            assert not cols["tags"].is_text and not cols["s"].is_text
            assert db.execute("SELECT count(*) FROM p WHERE m LIKE 'o%'").rows == ((1,),)
            r = db.execute("SELECT count(*) FROM p WHERE tags LIKE '%a%'")  # no LIKE for a list: read as text
            assert r.rows == ((1,),) and "CAST(tags AS TEXT)" in r.sql


def _gadgets(path: Path) -> Path:
    """A DuckDB file of gadgets whose power is a JSON value: 9, 650 and the text "n/a"."""
    return duckdb_file(path, "CREATE TABLE gadget (name VARCHAR, specs JSON); INSERT INTO gadget VALUES "
                       "('Lamp', '{\"watts\": 9}'), ('Drill', '{\"watts\": 650}'), ('Dial', '{\"watts\": \"n/a\"}')")


def test_numbers_inside_json_are_compared_as_numbers(tmp_path: Path) -> None:
    """``doc ->> 'watts' > '100'`` ran and compared text ('9' > '100'): it now compares the numbers."""
    with Database.open(_gadgets(tmp_path / "json.duckdb")) as db:
        assert db.execute("SELECT name FROM gadget WHERE specs->>'watts' > '100'").rows == (("Drill",),)
        assert db.execute("SELECT name FROM gadget WHERE specs->>'$.watts' <= 100").rows == (("Lamp",),)
        assert db.execute("SELECT name FROM gadget WHERE specs->>'watts' = 'n/a'").rows == (("Dial",),)


def test_an_answer_shows_the_sql_that_ran_and_its_trace_what_the_model_wrote(tmp_path: Path) -> None:
    path = _gadgets(tmp_path / "json.duckdb")
    wrote = "SELECT name FROM gadget WHERE specs->>'watts' > '100'"
    engine = sqlweave.connect(path, llm=FakeLLM(responder=lambda *_: wrote), pipeline="zero-shot")
    answer = engine.ask("Which gadgets draw more than 100 watts?")
    assert answer.result is not None and answer.result.rows == (("Drill",),)
    assert answer.sql == answer.result.sql and "TRY_CAST" in answer.sql  # copied elsewhere, it gives these rows
    generate, execute = (next(e for e in answer.trace if e.stage == name) for name in ("generate", "execute"))
    assert generate.calls[0].outputs == (wrote,)  # what the model wrote stays in the trace
    assert execute.notes["ran_as"] == answer.sql and "TRY_CAST" not in (execute.sql or "")
    with Database.open(path) as db:
        assert db.execute(answer.sql).rows == answer.result.rows
    unsure = engine.ask("Which gadgets draw more than 100 watts?", min_confidence=1.0)
    assert unsure.unsure and [r.sql for r in unsure.readings][:1] == [answer.sql]  # its readings show it too


def test_a_file_that_is_not_a_duckdb_database_is_not_found_and_says_so(tmp_path: Path) -> None:
    from sqlweave.errors import DatabaseNotFoundError

    path = tmp_path / "noise.duckdb"
    path.write_bytes(bytes(range(256)) * 40)
    with pytest.raises(DatabaseNotFoundError, match="not a valid DuckDB database") as err:
        Database.open(path)
    assert err.value.retryable is False and "a DuckDB file is written by DuckDB" in (err.value.hint or "")
