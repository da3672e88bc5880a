"""Checks shared by the live PostgreSQL, DuckDB and MariaDB tests (and SQLite, the reference)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from sqlweave.agent.tools import Toolkit
from sqlweave.database import Database
from sqlweave.retrieval.values import ValueIndex
from sqlweave.sql.extract import extract_sql
from sqlweave.sql.repair import repair_schema_links
from sqlweave.sql.rewrite import relink_values
from sqlweave.stages.rewrite import value_probe

#: SQL a model writes in SQLite's (or MySQL's, or T-SQL's) dialect, and the SQLite query that gives the expected
#: answer (None: the same text). Each runs on every engine after the extract stage's transpilation and must
#: give SQLite's rows.
DIALECT_CASES: list[tuple[str, str | None]] = [
    # dates
    ("SELECT name FROM event WHERE strftime('%Y', happened) = '2020' ORDER BY id", None),
    ("SELECT strftime('%Y-%m', happened), strftime('%d/%m/%Y', happened) FROM event ORDER BY id", None),
    ("SELECT CAST(strftime('%Y', happened) AS INTEGER) + 1 FROM event ORDER BY id", None),
    ("SELECT count(*) FROM event WHERE strftime('%m', ended) = '07'", None),
    ("SELECT date(happened, '+1 day'), date(happened, '-7 days'), date(happened, '+1 year') FROM event ORDER BY id", None),
    ("SELECT datetime(ended, '+2 hours') FROM event ORDER BY id", None),
    ("SELECT julianday(ended) - julianday(happened) FROM event ORDER BY id", None),
    ("SELECT julianday(happened) FROM event ORDER BY id", None),
    ("SELECT count(*) FROM event WHERE happened < date('now')", None),
    ("SELECT name FROM event WHERE happened BETWEEN '2020-01-01' AND '2020-12-31' ORDER BY id", None),
    # dates kept as text (booked), compared with dates, as SQLite compares them
    ("SELECT name FROM event WHERE booked >= date(happened, '-14 days') ORDER BY id", None),
    ("SELECT name FROM event AS e WHERE e.booked BETWEEN date(e.happened, '-30 days') AND e.happened ORDER BY id",
     None),
    ("SELECT count(*) FROM event WHERE booked < ended AND booked < date('now')", None),
    # seconds since 1970 (stamp), and date fields used as numbers, as SQLite reads them
    ("SELECT datetime(stamp, 'unixepoch'), date(stamp, 'unixepoch', '+1 day') FROM event ORDER BY id", None),
    ("SELECT strftime('%Y-%m', stamp, 'unixepoch'), strftime('%s', ended) - stamp FROM event ORDER BY id", None),
    ("SELECT strftime('%Y', ended) - strftime('%Y', booked), (strftime('%w', happened) + 6) % 7, "
     "avg(strftime('%m', happened)) FROM event GROUP BY id ORDER BY id", None),
    ("SELECT count(*) FROM event WHERE strftime('%w', happened) IN ('0', '6')", None),
    # the same forms nested in one another
    ("SELECT round(julianday(datetime(stamp, 'unixepoch')) - julianday(happened), 4), "
     "strftime('%Y', stamp, 'unixepoch') - 2000 FROM event ORDER BY id", None),
    # a number column compared with a date field, which SQLite compares as numbers
    ("SELECT name FROM event WHERE strftime('%d', ended) > id AND id <> strftime('%Y', happened) ORDER BY id", None),
    ("SELECT name FROM event WHERE strftime('%w', happened) > id ORDER BY id", None),
    # booleans as SQLite keeps them: 1 and 0
    ("SELECT count(*), sum(paid) FROM event WHERE paid = 1", None),
    ("SELECT name FROM event WHERE paid <> 0 AND 1 = paid ORDER BY id", None),
    # strings
    ("SELECT substr(name, 1, 6), lower(name), upper(city), length(name) FROM event ORDER BY id", None),
    ("SELECT name || ' in ' || city FROM event ORDER BY id", None),
    ("SELECT IFNULL(note, 'none') FROM event ORDER BY id", None),
    ("SELECT replace(city, 'Paris', 'PARIS'), trim('  x  '), instr(name, 'a') FROM event ORDER BY id", None),
    ("SELECT name FROM event WHERE city = 'paris' COLLATE NOCASE ORDER BY id", None),
    # '%' in SQL (a placeholder mark for psycopg, even with no parameters)
    ("SELECT name FROM event WHERE lower(name) LIKE '%a%' ORDER BY id", None),
    # LIKE without regard to case, as on SQLite
    ("SELECT name FROM event WHERE name LIKE '%s%' ORDER BY id", None),
    ("SELECT name FROM event WHERE city NOT LIKE 'PARIS' AND name LIKE 'W%' ORDER BY id", None),
    ("SELECT count(*) FROM event WHERE `city` LIKE 'paris' AND date(happened) > '2020-01-01'", None),
    ("SELECT '100%', 'a %s b', '%%', '%(x)s' FROM event ORDER BY id LIMIT 1", None),
    # LIKE over dates and numbers, which SQLite reads as text
    ("SELECT name FROM event WHERE happened LIKE '2020%' ORDER BY id", None),
    ("SELECT count(*) FROM event AS e WHERE e.ended LIKE '2020-07-03%' OR e.id LIKE '4'", None),
    ("SELECT T1.name FROM event AS T1 WHERE T1.happened NOT LIKE '%-12-%' AND T1.city LIKE 'PARIS' ORDER BY T1.id", None),
    # SQLite's bare columns in aggregate queries: from the row of the one min()/max(), else one value per group
    ("SELECT name, city, max(price) FROM event GROUP BY city ORDER BY city", None),
    ("SELECT name, min(happened) FROM event", None),
    ("SELECT city, note, count(*) FROM event WHERE note IS NOT NULL GROUP BY city ORDER BY city", None),
    ("SELECT T1.name, count(*) FROM event AS T1 JOIN event AS T2 ON T1.city = T2.city GROUP BY T1.id ORDER BY T1.id",
     None),
    ("SELECT T1.name, count(*) FROM event AS T1 GROUP BY T1.id ORDER BY T1.name", None),
    # a result column's alias in HAVING; a double-quoted name that names nothing is a string
    ("SELECT city, count(*) AS n FROM event GROUP BY city HAVING n > 1", None),
    ("SELECT city, count(*) AS n FROM event GROUP BY city ORDER BY CASE WHEN n > 1 THEN 0 ELSE 1 END, n, city", None),
    ("SELECT count(*) FROM (SELECT city FROM event GROUP BY city)", None),
    # NULLs first in ascending, last in descending order, as SQLite sorts them
    ("SELECT name FROM event ORDER BY note, id", None),
    ("SELECT name, note FROM event ORDER BY note DESC, id LIMIT 3", None),
    ("SELECT name FROM event WHERE city = \"Paris\" OR note LIKE \"%door%\" ORDER BY id", None),
    # quoting, LIMIT forms, aggregates
    ("SELECT `name` FROM `event` ORDER BY `id` LIMIT 1, 2", None),
    ("SELECT TOP 2 name FROM event ORDER BY price DESC", "SELECT name FROM event ORDER BY price DESC LIMIT 2"),
    ("SELECT city, count(*) FROM event GROUP BY city ORDER BY count(*) DESC, city", None),
    ("SELECT round(avg(price), 2), max(price) - min(price) FROM event", None),
]


#: SQL that uses numbers kept as text as numbers (``stall.visitors``, ``stall.rating``), and a SQLite query that
#: gives what it means: the text read as a number, a text that spells none as NULL. PostgreSQL and DuckDB refuse
#: the SQL as written (``function avg(text) does not exist``); SQLite would read ``'n/a'`` as 0 and compare text.
TEXT_NUMBER_CASES: list[tuple[str, str]] = [
    ("SELECT round(avg(visitors), 2), sum(rating) FROM stall",
     "SELECT 401.67, 14.75"),
    ("SELECT id FROM stall WHERE visitors > 100 ORDER BY id", "VALUES (1), (4)"),
    ("SELECT T2.name, count(*) FROM stall AS T1 JOIN event AS T2 ON T1.event_id = T2.id "
     "WHERE T1.rating BETWEEN 3 AND 5 OR T1.visitors IN (85, 1000) GROUP BY T2.name ORDER BY T2.name",
     "VALUES ('Autumn Show', 2), ('Spring Gala', 2)"),
    ("SELECT id, visitors * 2, rating - 1 FROM stall WHERE rating < (SELECT avg(rating) FROM stall) ORDER BY id",
     "VALUES (3, NULL, 2), (5, NULL, 1.5)"),
    ("SELECT count(*) FROM stall AS s JOIN event AS e ON s.event_id = e.id WHERE s.rating > e.price / 5",
     "SELECT 3"),
]

#: A subquery compared with ``=`` or ``<>`` that returns several rows: SQLite answers from its first row, the
#: other engines refuse it; it means membership (``IN``, ``NOT IN``), which they then answer.
MANY_ROW_CASES: list[tuple[str, str]] = [
    ("SELECT name FROM event WHERE city = (SELECT city FROM event WHERE price > 6) ORDER BY id",
     "SELECT name FROM event WHERE city IN ('Paris', 'Lyon') ORDER BY id"),
    ("SELECT name FROM event WHERE (SELECT event_id FROM stall WHERE rating <> 'n/a') <> id ORDER BY id",
     "SELECT name FROM event WHERE id = 2"),
]


#: PostgreSQL's own SQL that SQLite lacks (a median and percentiles, month names read as dates), and a SQLite query
#: giving what it means: on SQLite through the transpiler, and on PostgreSQL as it is, both must give those rows.
POSTGRES_ON_SQLITE: list[tuple[str, str]] = [
    ("SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY price), PERCENTILE_CONT(0.25) WITHIN GROUP (ORDER BY price "
     "DESC), PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY id) FROM event", "SELECT 10.25, 14.4375, 2"),
    ("SELECT city, PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY price) FROM event GROUP BY city ORDER BY city",
     "VALUES ('Lyon', 8.0), ('Nice', 5.75), ('Paris', 16.375)"),
    ("SELECT name, EXTRACT(MONTH FROM TO_DATE('August', 'Month')), EXTRACT(MONTH FROM TO_DATE('oct', 'Mon')) FROM "
     "event ORDER BY TO_DATE(CASE id WHEN 1 THEN 'March' WHEN 2 THEN 'january' WHEN 3 THEN 'December' ELSE 'February' "
     "END, 'FMMonth')",
     "SELECT name, 8, 10 FROM event ORDER BY CASE id WHEN 2 THEN 1 WHEN 4 THEN 2 WHEN 1 THEN 3 ELSE 4 END"),
]


#: SQL a model writes in PostgreSQL's or MySQL's dialect for a SQLite database, and a SQLite query that gives the
#: answer it means. Each runs on SQLite after the extract stage's transpilation and must give that query's rows.
FOREIGN_ON_SQLITE: list[tuple[str, str]] = [
    ("SELECT name, EXTRACT(YEAR FROM happened), EXTRACT(MONTH FROM happened) FROM event ORDER BY id",
     "SELECT name, 2019 + (id > 1) + (id > 3), CAST(substr(happened, 6, 2) AS INTEGER) FROM event ORDER BY id"),
    ("SELECT count(*) FROM event WHERE YEAR(happened) = 2020 AND MONTH(ended) >= 7", "SELECT 2"),
    ("SELECT DATE_PART('day', ended), EXTRACT(QUARTER FROM happened), EXTRACT(HOUR FROM ended) FROM event ORDER BY id",
     "VALUES (14, 1, 22), (3, 3, 18), (1, 4, 1), (24, 4, 20)"),
    ("SELECT name FROM event WHERE booked >= happened - INTERVAL '14 days' ORDER BY id",
     "SELECT name FROM event WHERE id < 4 ORDER BY id"),
    ("SELECT name FROM event WHERE booked >= DATE_SUB(happened, INTERVAL 2 WEEK) ORDER BY id",
     "SELECT name FROM event WHERE id < 4 ORDER BY id"),
    ("SELECT happened + INTERVAL 1 MONTH, ended - INTERVAL '90 minutes' FROM event WHERE id = 2",
     "SELECT '2020-08-01', '2020-07-03 16:30:00'"),
    ("SELECT DATE_TRUNC('month', happened), DATE_TRUNC('year', ended) FROM event WHERE id = 3",
     "SELECT '2020-10-01', '2020-01-01'"),
    ("SELECT CAST(ended AS DATE), ended::date FROM event WHERE id = 2", "SELECT '2020-07-03', '2020-07-03'"),
    ("SELECT TO_CHAR(happened, 'YYYY-MM') FROM event ORDER BY id", "SELECT substr(happened, 1, 7) FROM event ORDER BY id"),
    ("SELECT count(*) FROM event WHERE happened < NOW() - INTERVAL '1 year' AND ended < CURRENT_DATE", "SELECT 4"),
    # ILIKE (SQLite's LIKE ignores case), PostgreSQL's :: casts, weeks that start on Monday
    ("SELECT name FROM event WHERE name ILIKE '%S%' AND city NOT ILIKE 'paris' ORDER BY id", "SELECT 'summer fair'"),
    ("SELECT price::int, id::float / 4 FROM event WHERE id = 2", "SELECT 8, 0.5"),
    ("SELECT DATE_TRUNC('week', happened) FROM event ORDER BY id",
     "VALUES ('2019-03-11'), ('2020-06-29'), ('2020-10-26'), ('2021-12-20')"),
    ("SELECT DATE_TRUNC('quarter', happened), EXTRACT(YEAR FROM AGE(happened, booked)), "
     "EXTRACT(YEAR FROM AGE(happened, '2000-07-01')) FROM event ORDER BY id",
     "VALUES ('2019-01-01', 0, 18), ('2020-07-01', 0, 20), ('2020-10-01', 0, 20), ('2021-10-01', 0, 21)"),
    ("SELECT to_timestamp(stamp), extract(HOUR FROM to_timestamp(stamp)) FROM event WHERE id = 1",
     "SELECT '2019-03-14 22:30:00', 22"),
    # text read as a date with an ISO format (PostgreSQL's TO_DATE, MySQL's STR_TO_DATE)
    ("SELECT name FROM event WHERE TO_DATE(booked, 'YYYY-MM-DD') >= happened - INTERVAL '14 days' "
     "AND TO_TIMESTAMP(ended, 'YYYY-MM-DD HH24:MI:SS') > TO_DATE('2020-01-01', 'YYYY-MM-DD') ORDER BY id",
     "SELECT name FROM event WHERE id IN (2, 3) ORDER BY id"),
    ("SELECT STR_TO_DATE(booked, '%Y-%m-%d') FROM event WHERE id = 4", "SELECT '2021-11-01'"),
    # date - date is days, date + n is n days later (SQLite alone would do arithmetic on the years)
    ("SELECT ended::date - happened::date, CAST(ended AS TIMESTAMP) - CAST(happened AS TIMESTAMP) FROM event "
     "ORDER BY id", "VALUES (0, 0.9375), (2, 2.75), (1, 1.0520833333333333), (4, 4.833333333333333)"),
    ("SELECT name FROM event WHERE CAST(booked AS DATE) + 14 >= CAST(happened AS DATE) AND CURRENT_DATE - 30 > booked "
     "ORDER BY id", "SELECT name FROM event WHERE id < 4 ORDER BY id"),
    *POSTGRES_ON_SQLITE,
]


def normal(value: Any) -> Any:
    """One spelling per value across engines: dates as ISO text, numbers as rounded floats."""
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, (Decimal, float)) and not isinstance(value, bool):
        return round(float(value), 6)
    return value


def check_concert_singer_schema(db: Database, name_comment: str, table_comment: str) -> None:
    """What introspection must read of concert_singer as sqlweave's loader copies it (names as Spider spells
    them): tables, keys, comments, sample rows and column statistics."""
    s = db.schema()
    assert set(s.table_names) == {"stadium", "singer", "concert", "singer_in_concert"}
    singer = s.table("singer")
    assert singer.primary_key == ("Singer_ID",)
    assert s.table("singer_in_concert").primary_key == ("concert_ID", "Singer_ID")
    assert singer.column("Name").description == name_comment
    assert singer.description == table_comment
    assert singer.row_count == 6 and len(singer.sample_rows) == 3
    age = singer.column("Age")
    assert age.stats.minimum == 25 and age.stats.maximum == 52 and age.stats.distinct == 6
    assert {str(fk) for fk in s.foreign_keys} == {
        "concert.Stadium_ID -> stadium.Stadium_ID",
        "singer_in_concert.Singer_ID -> singer.Singer_ID",
        "singer_in_concert.concert_ID -> concert.concert_ID",
    }


def check_tools_and_repair(db: Database) -> None:
    """The value index, the agent's tools, schema repair and value relinking on concert_singer as the loader copies
    it (names as Spider spells them)."""
    hit = ValueIndex.build(db, persist=False).search("Frence", k=1)[0]
    assert (hit.table, hit.column, hit.value) == ("singer", "Country", "France")
    kit = Toolkit(db)
    assert kit.search_value("nederland")[0].value == "Netherlands"
    path = kit.find_shortest_path("singer.Name", "stadium.Name")
    assert path.tables == ("singer", "singer_in_concert", "concert", "stadium")
    assert kit.execute_sql(f"SELECT count(*) {path.from_clause}").rows[0][0] > 0
    fixed = repair_schema_links("SELECT concert_Name FROM singer WHERE Name = 'Timbaland'", db.schema(), db.dialect)
    assert fixed.changed and sorted(db.execute(fixed.sql).rows) == [("Auditions",), ("Week 2",)]
    relinked = relink_values("SELECT Name FROM singer WHERE Name = 'France'", db.schema(), value_probe(db), db.dialect)
    assert relinked.sql == "SELECT Name FROM singer WHERE Country = 'France'" and db.execute(relinked.sql).row_count == 4


def rows(result: Any) -> list[tuple[Any, ...]]:
    return [tuple(normal(v) for v in r) for r in result.rows]


def run_as_model_wrote_it(db: Database, sql: str) -> tuple[str, list[tuple[Any, ...]]]:
    """The extract stage's path: find the SQL in a model answer, bring it to the database's dialect, run it."""
    ran = extract_sql(f"```sql\n{sql}\n```", db.dialect)
    return ran, rows(db.execute(ran))


#: Statements and side-effecting functions a model (or a user) might send; each must be refused by the
#: classifier and change nothing.
PG_ATTACKS = [
    "DROP TABLE singer",
    "DELETE FROM singer",
    "UPDATE singer SET age = 0",
    "INSERT INTO stadium (stadium_id, name) VALUES (99, 'x')",
    "TRUNCATE singer_in_concert",
    "COMMIT; DELETE FROM singer",
    "SELECT 1; DELETE FROM singer",
    "SELECT pg_sleep(30)",
    "SELECT pg_catalog.pg_sleep(30)",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT pg_read_binary_file('/etc/hostname')",
    "SELECT pg_ls_dir('.')",
    "SELECT lo_import('/etc/passwd')",
    "SELECT lo_create(0)",
    "COPY (SELECT 1) TO PROGRAM 'touch /tmp/sqlweave-pwned'",
    "COPY singer FROM PROGRAM 'echo 1'",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "SELECT * FROM dblink('dbname=concert_singer', 'DELETE FROM singer RETURNING 1') AS t(x int)",
    "SELECT dblink_exec('dbname=concert_singer', 'DELETE FROM singer')",
    "SELECT nextval('ticket_seq')",
    "SELECT setval('ticket_seq', 100)",
    "SELECT * FROM singer FOR UPDATE",
    "SELECT * FROM singer FOR SHARE",
    "WITH d AS (DELETE FROM singer RETURNING *) SELECT count(*) FROM d",
    "WITH u AS (UPDATE singer SET age = 1 RETURNING *) SELECT * FROM u",
    "WITH i AS (INSERT INTO stadium (stadium_id) VALUES (98) RETURNING *) SELECT * FROM i",
    "SELECT * INTO singer_copy FROM singer",
    "CREATE TABLE t AS SELECT * FROM singer",
    "SELECT query_to_xml('DELETE FROM singer', true, false, '')",
    "SELECT pg_advisory_lock(1)",
    "SELECT pg_terminate_backend(pg_backend_pid())",
    "SELECT pg_reload_conf()",
    "SELECT pg_notify('channel', 'x')",
    "SET default_transaction_read_only = off",
    "EXPLAIN ANALYZE DELETE FROM singer",
    "DO $$ BEGIN DELETE FROM singer; END $$",
    "CALL nothing()",
    "PREPARE p AS DELETE FROM singer",
    "GRANT ALL ON singer TO PUBLIC",
    "VACUUM singer",
    "LOCK TABLE singer",
]

#: Writes that the read-only transaction stops too, past the classifier (the second line of defence). The rest of
#: PG_ATTACKS only the classifier stops on a superuser's connection: COPY ... TO PROGRAM and pg_read_file run in
#: a read-only transaction, dblink opens a session of its own, pg_terminate_backend acts on another session,
#: and lo_import runs but is rolled back with the transaction (sqlweave never commits).
PG_WRITES_STOPPED_BY_THE_SERVER = [
    "DROP TABLE singer",
    "DELETE FROM singer",
    "UPDATE singer SET age = 0",
    "INSERT INTO stadium (stadium_id, name) VALUES (99, 'x')",
    "TRUNCATE singer_in_concert",
    "COMMIT; DELETE FROM singer",
    "SELECT 1; DELETE FROM singer",
    "SELECT nextval('ticket_seq')",
    "SELECT setval('ticket_seq', 100)",
    "SELECT * FROM singer FOR UPDATE",
    "WITH d AS (DELETE FROM singer RETURNING *) SELECT count(*) FROM d",
    "WITH u AS (UPDATE singer SET age = 1 RETURNING *) SELECT * FROM u",
    "WITH i AS (INSERT INTO stadium (stadium_id) VALUES (98) RETURNING *) SELECT * FROM i",
    "SELECT * INTO singer_copy FROM singer",
    "CREATE TABLE t AS SELECT * FROM singer",
    "COPY singer FROM PROGRAM 'echo 1'",
    "EXPLAIN ANALYZE DELETE FROM singer",
    "DO $$ BEGIN DELETE FROM singer; END $$",
    "GRANT ALL ON singer TO PUBLIC",
    "VACUUM singer",
]

DUCKDB_ATTACKS = [
    "DROP TABLE singer",
    "DELETE FROM singer",
    "UPDATE singer SET Age = 0",
    "INSERT INTO stadium (Stadium_ID) VALUES (99)",
    "SELECT 1; DELETE FROM singer",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_csv_auto('/etc/passwd')",
    "SELECT * FROM read_parquet('x.parquet')",
    "SELECT * FROM parquet_scan('x.parquet')",
    "SELECT * FROM read_json('x.json')",
    "SELECT * FROM read_json_auto('x.json')",
    "SELECT * FROM read_ndjson('x.json')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_blob('/etc/passwd')",
    "SELECT * FROM glob('/*')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM 'data.csv'",
    "SELECT * FROM query('DELETE FROM singer')",
    "SELECT getenv('HOME')",
    "COPY singer TO '/tmp/sqlweave-out.csv'",
    "COPY (SELECT * FROM singer) TO '/tmp/sqlweave-out.parquet' (FORMAT parquet)",
    "COPY singer FROM '/tmp/sqlweave-in.csv'",
    "ATTACH '/tmp/sqlweave-other.duckdb' AS other",
    "DETACH other",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "SET threads = 1",
    "PRAGMA enable_profiling",
    "PRAGMA database_size",
    "EXPORT DATABASE '/tmp/sqlweave-export'",
    "IMPORT DATABASE '/tmp/sqlweave-export'",
    "CHECKPOINT",
    "CREATE TABLE t AS SELECT * FROM singer",
    "CREATE MACRO m(x) AS x + 1",
    "WITH d AS (DELETE FROM singer RETURNING *) SELECT count(*) FROM d",
    "CALL pragma_version()",
]

#: Writes that MySQL's read-only transaction stops too, past the classifier (the second line of defence); the
#: driver runs one statement per call, so a second statement is a syntax error there. The rest of MYSQL_ATTACKS
#: only the classifier stops for a user with every privilege: INTO OUTFILE and LOAD_FILE read and write the
#: server's files, LOCK TABLES and GET_LOCK hold locks, SET changes the session (sqlweave starts each query's
#: transaction READ ONLY itself, whatever the session's default).
MYSQL_WRITES_STOPPED_BY_THE_SERVER = [
    "DROP TABLE singer",
    "DELETE FROM singer",
    "UPDATE singer SET Age = 0",
    "INSERT INTO stadium (Stadium_ID, Name) VALUES (99, 'x')",
    "REPLACE INTO stadium (Stadium_ID, Name) VALUES (1, 'x')",
    "TRUNCATE singer_in_concert",
    "RENAME TABLE singer TO gone",
    "CREATE TABLE t AS SELECT * FROM singer",
    "CREATE TEMPORARY TABLE t (x INT)",
    "SELECT * FROM singer FOR UPDATE",
    "SELECT 1; DELETE FROM singer",
    "COMMIT; DELETE FROM singer",
]

#: MySQL and MariaDB: statements, side-effecting functions and comment tricks a model (or a user) might send; each
#: must be refused by the classifier and change nothing (the writes above, and what only the classifier stops).
MYSQL_ATTACKS = MYSQL_WRITES_STOPPED_BY_THE_SERVER + [
    "SELECT SLEEP(30)",
    "SELECT BENCHMARK(100000000, MD5('x'))",
    "SELECT LOAD_FILE('/etc/passwd')",
    "SELECT * FROM singer INTO OUTFILE '/tmp/sqlweave-pwned.txt'",
    "SELECT Name FROM singer LIMIT 1 INTO DUMPFILE '/tmp/sqlweave-pwned.bin'",
    "SELECT Name INTO @stolen FROM singer LIMIT 1",
    "SELECT @n := COUNT(*) FROM singer",
    "SELECT Name /*!, LOAD_FILE('/etc/passwd') */ FROM singer",
    "SELECT Name /*!50000 , LOAD_FILE('/etc/passwd') */ FROM singer",
    "SELECT Name /*M!, LOAD_FILE('/etc/passwd') */ FROM singer",
    "SELECT 1 --1, LOAD_FILE('/etc/passwd')",
    "LOAD DATA INFILE '/etc/passwd' INTO TABLE singer",
    "SELECT GET_LOCK('sqlweave', 10)",
    "SELECT RELEASE_ALL_LOCKS()",
    "SELECT * FROM singer LOCK IN SHARE MODE",
    "ALTER TABLE singer ADD COLUMN x INT",
    "SET GLOBAL max_connections = 1",
    "SET SESSION TRANSACTION READ WRITE",
    "SET @@SESSION.sql_mode = 'ANSI_QUOTES'",
    "GRANT ALL ON *.* TO 'sqlweave'@'%'",
    "CREATE USER pwn",
    "LOCK TABLES singer WRITE",
    "HANDLER singer OPEN",
    "DO SLEEP(5)",
    "CALL nothing()",
    "PREPARE p FROM 'DELETE FROM singer'",
    "FLUSH TABLES",
    "KILL 1",
    "SHUTDOWN",
    "INSTALL PLUGIN x SONAME 'x.so'",
]
