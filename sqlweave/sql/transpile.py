"""Bring SQL written in another dialect to the database's own before it runs.

Small models learnt SQL mostly from SQLite and MySQL examples: asked for PostgreSQL or DuckDB they still write
``strftime('%Y', d)``, backtick-quoted names, ``LIMIT 5, 10``, ``IFNULL``, ``date('now')`` or ``TOP 3``. The
SQL is parsed as the target dialect first; when that fails, or the tree holds a construct the target lacks
(SQLite's date functions, a DuckDB ``strftime`` with SQLite's argument order), it is read as SQLite, MySQL or
T-SQL instead and written in the target dialect with sqlglot. SQL that is already the target's own comes
back unchanged, or normalised by sqlglot where the target's parser reads a foreign form (``LIMIT 5, 10``).
On SQLite, SQLite's own SQL is never touched; PostgreSQL's and MySQL's date forms (``EXTRACT``, ``INTERVAL``
arithmetic, ``DATE_TRUNC``, ``CAST(d AS DATE)``) are written in SQLite's.

What SQLite means by a query is kept, so a question gets the same answer on every engine:

- ``LIKE`` matches without regard to case on SQLite (and MySQL), where models learnt it, and with regard to case on
  PostgreSQL and DuckDB: ``name LIKE '%paris%'`` would miss ``'Paris'`` there. It becomes ``ILIKE`` on those two.
- A bare column of an aggregate query (``SELECT T1.name, count(*) ... GROUP BY T1.id``) is refused by both; it
  becomes the value SQLite gives (see :func:`_bare_columns`).
- A result column's alias in ``WHERE``/``HAVING``, and a derived table with no name, are refused by PostgreSQL;
  the alias becomes its expression and the derived table gets a name.
- NULLs sort first in ascending order on SQLite and last on the other two: ``ORDER BY`` says SQLite's order.
- With the schema at hand (:meth:`sqlweave.db.Database.execute` does this with :func:`for_schema`), a
  double-quoted name that names nothing is a string (:func:`sqlite_strings`), a date or number under ``LIKE`` is
  read as text (:func:`text_patterns`), a date kept as text is read as a timestamp where the query compares it
  with a date (:func:`text_dates`), and a number kept as text as a number where the query sums it or compares it
  with one (:func:`text_numbers`; SQLite would read ``'n/a'`` as 0 and compare text).
- ``x = (SELECT ...)`` whose subquery returns several rows is answered by SQLite from the first row and refused by
  the others; after that error, :meth:`sqlweave.db.Database.execute` runs it as ``x IN (SELECT ...)``
  (:func:`subqueries_as_sets`).

``benchmarks/bench_dialects.py`` measures how many of a Spider run's queries give SQLite's rows on each engine.

>>> to_dialect("SELECT strftime('%Y', founded) FROM club", "postgres")
"SELECT TO_CHAR(CAST(founded AS TIMESTAMP), 'YYYY') FROM club"
>>> to_dialect("SELECT `name` FROM singer LIMIT 1, 2", "duckdb")
'SELECT "name" FROM singer LIMIT 2 OFFSET 1'
>>> to_dialect("SELECT count(*) FROM singer", "postgres")
'SELECT count(*) FROM singer'
>>> to_dialect("SELECT strftime('%Y', d) FROM t", "sqlite")
"SELECT strftime('%Y', d) FROM t"
>>> to_dialect("SELECT name FROM event WHERE city NOT LIKE '%paris%'", "postgres")
"SELECT name FROM event WHERE city NOT ILIKE '%paris%'"
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from .rules.base import Context, apply, parse as _parse, rewritten, unparen as _unparen
from .rules.detect import MISREAD, RENDER_ALWAYS, SOURCES, foreign, has_double_colon, not_sqlite, tokens
from .rules.foreign_dates import FOREIGN
from .rules.into_sqlite import numbers_as_dates, sqlite_form
from .rules.schema_forms import SCHEMA_FORMS
from .rules.sqlite_forms import SQLITE_FORMS

if TYPE_CHECKING:
    from ..schema import Schema

__all__ = ["MANY_ROWS", "SOURCES", "boolean_numbers", "fix_case", "for_schema", "from_dialect", "numbered_fields",
           "sqlite_strings", "subqueries_as_sets", "text_dates", "text_numbers", "text_patterns", "to_dialect",
           "to_dialect_fired"]


def from_dialect(sql: str, read: str | None, target: str, *, schema: "Schema | None" = None) -> str:
    """``sql``, written for ``read`` (a sqlglot dialect name: ``postgres``, ``mysql``, ``sqlite``, ...), in the
    ``target`` dialect, for SQL a person brings from another engine. ``read`` None or the target's own: unchanged.

    Raises :class:`~sqlweave.errors.ConfigurationError` for a dialect sqlglot does not know.

    >>> from_dialect("SELECT `name` FROM singer LIMIT 2, 3", "mysql", "postgres")
    'SELECT name FROM singer LIMIT 3 OFFSET 2'
    """
    if not read or read == target:
        return sql
    try:
        sqlglot.Dialect.get_or_raise(read)
    except ValueError:
        from ..errors import ConfigurationError

        raise ConfigurationError(f"unknown SQL dialect {read!r}",
                                 hint="Name the dialect the SQL is written in as sqlglot does: sqlite, postgres, "
                                      "duckdb, mysql, tsql, bigquery, snowflake, ...") from None
    return to_dialect(sql, target, (read,), schema=schema)


#: What the trace names when the target's parser read a foreign form (``LIMIT 5, 10``, ``IFNULL``) and sqlglot's
#: rendering of it is what runs, with no rule fired.
RENDERED = "rendered_by_sqlglot"


def to_dialect(sql: str, target: str | None, sources: tuple[str, ...] = SOURCES, *,
               schema: "Schema | None" = None) -> str:
    """``sql`` in the ``target`` dialect (sqlglot names: ``postgres``, ``duckdb``, ...).

    Returns ``sql`` itself when the target is unknown, when it already is the target's own, and when no dialect
    reads it (the database then reports the error). SQLite's own SQL is never changed; what SQLite has no form for
    (PostgreSQL's and MySQL's date arithmetic and fields) is written in SQLite's (:func:`_to_sqlite`); with the
    ``schema``, not when the query reads a number column as a date, which SQLite would answer with nonsense
    instead of an error.
    """
    return to_dialect_fired(sql, target, sources, schema=schema)[0]


def to_dialect_fired(sql: str, target: str | None, sources: tuple[str, ...] = SOURCES, *,
                     schema: "Schema | None" = None) -> tuple[str, list[str]]:
    """:func:`to_dialect`, and the names of the rules that changed the SQL (none when it comes back as it is).

    >>> to_dialect_fired("SELECT name FROM t WHERE date(d) = '2020-01-01'", "postgres")
    ("SELECT name FROM t WHERE CAST(d AS DATE) = '2020-01-01'", ['read as sqlite', 'sqlite_dates'])
    """
    if not target or not sql.strip():
        return sql, []
    if target == "sqlite":
        return _to_sqlite(sql, schema)
    tree = _parse(sql, target)
    misread = MISREAD.get(target)
    if tree is not None and not foreign(tree, target) and not (misread is not None and misread(sql)):
        try:
            tree, fired = apply(tree, SQLITE_FORMS, Context(target, schema, sql))
            out = tree.sql(dialect=target)
        except (SqlglotError, ValueError):
            return sql, []
        # Keep the model's own text unless the target's parser read a foreign form it rewrites (LIMIT a, b,
        # IFNULL, LIKE), or the target would not read it (MySQL: COUNT (*), no space before a call's
        # parenthesis there): then sqlglot's rendering is what runs.
        # With no rule fired, what changed is sqlglot's reading of a foreign form: named so in the trace.
        fired = fired or [RENDERED]
        render = RENDER_ALWAYS.get(target)
        if render is not None and render(sql):
            return out, fired
        return (sql, []) if tokens(out, target) == tokens(sql, target) else (out, fired)
    for source in sources:
        if source == target:
            continue
        tree = _parse(sql, source)
        if tree is None:
            continue
        try:
            ctx = Context(target, schema, sql)
            tree, fired = apply(tree, FOREIGN, ctx)
            tree, more = apply(tree, SQLITE_FORMS, ctx)
            out = tree.sql(dialect=target)
        except (SqlglotError, ValueError):
            continue
        if _parse(out, target) is not None:
            return out, [f"read as {source}", *fired, *more]
    return sql, []


def _to_sqlite(sql: str, schema: "Schema | None" = None) -> tuple[str, list[str]]:
    """``sql`` unchanged when SQLite reads it as its writer meant; else, read as PostgreSQL, MySQL or SQLite, in
    SQLite's forms: ``EXTRACT(YEAR FROM d)``, ``YEAR(d)`` and ``DATE_PART('year', d)`` become
    ``CAST(strftime('%Y', d) AS INTEGER)``; ``d - INTERVAL '14 days'``, ``DATE_SUB(d, INTERVAL 14 DAY)`` become
    ``date(d, '-14 day')`` (``datetime`` for hours, minutes, seconds and ``NOW()``); ``DATE_TRUNC('month', d)``
    becomes ``date(d, 'start of month')``; ``CAST(d AS DATE)``, a number on SQLite, becomes ``date(d)``;
    ``date - date`` becomes the days between them (``julianday``) and ``CURRENT_DATE - 7`` a week ago;
    ``ILIKE`` becomes ``LIKE``, which ignores case on SQLite, ``x::float`` ``CAST(x AS REAL)``,
    ``TO_TIMESTAMP(seconds)`` ``datetime(seconds, 'unixepoch')``, ``TO_DATE(text, 'YYYY-MM-DD')`` ``date(text)``,
    ``TO_DATE(month, 'Month')`` the first day of that month and ``PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY x)``
    ``percentile_cont(x, 0.5)``;
    ``TO_CHAR``, ``DATE_FORMAT``, ``NOW()`` and ``DATEDIFF`` go through sqlglot. SQL with a form none of those
    covers comes back unchanged, for SQLite to report.

    >>> _to_sqlite("SELECT EXTRACT(YEAR FROM d), count(*) FROM t WHERE d >= CURRENT_DATE - INTERVAL '30 days' GROUP BY 1")
    ("SELECT CAST(STRFTIME('%Y', d) AS INTEGER), COUNT(*) FROM t WHERE d >= DATE('now', '-30 day') GROUP BY 1", ['extract_field', 'interval_arithmetic'])
    >>> _to_sqlite("SELECT strftime('%Y', d) FROM t WHERE d > date('now', '-1 month')")  # SQLite's own
    ("SELECT strftime('%Y', d) FROM t WHERE d > date('now', '-1 month')", [])
    """
    tree = _parse(sql, "sqlite")
    if tree is not None and not not_sqlite(tree) and ("::" not in sql or not has_double_colon(sql)):
        return sql, []
    for source in ("postgres", "mysql", "sqlite"):
        tree = _parse(sql, source)
        if tree is None:
            continue
        if schema is not None and numbers_as_dates(tree, schema):
            return sql, []  # SQLite's error then says more than a wrong answer
        fired: list[str] = []
        try:
            out = sqlite_form(tree, Context("sqlite"), fired).sql(dialect="sqlite", unsupported_level=ErrorLevel.RAISE)
        except (SqlglotError, ValueError):
            continue
        back = _parse(out, "sqlite")
        # A TO_DATE whose format SQLite cannot read stays, for SQLite's error to name (STR_TO_DATE).
        if back is not None and not not_sqlite(back, unless=(exp.StrToDate, exp.StrToTime)):
            return out, fired or [RENDERED]
    return sql, []




# --- with the schema at hand: what SQLite reads by itself --------------------------------------------------


def for_schema(sql: str, schema: "Schema", dialect: str, *, strings: bool = True) -> str:
    """``sql`` with every schema-aware form below applied, parsed once and written once (only if one changed it).

    On PostgreSQL and DuckDB, in this order: a double-quoted name that names nothing becomes a string
    (:func:`sqlite_strings`, skipped with ``strings=False``), names are spelt as the schema spells them
    (:func:`fix_case`, PostgreSQL only), a date or number under ``LIKE`` is read as text (:func:`text_patterns`), and
    a text column compared with a date or time is read as a timestamp (:func:`text_dates`), a boolean column
    reads 1 and 0 as true and false (:func:`boolean_numbers`, PostgreSQL only), a number column compared with
    a date field written as text compares with it as a number (:func:`numbered_fields`), and a text column summed,
    averaged or compared with a number is read as a number (:func:`text_numbers`). SQL that would run is never
    changed, but for one form that runs and means something else: a JSON value ordered against a text that spells
    a number (``doc ->> 'watts' > '100'``, a text comparison) compares the numbers. On other engines, or when the
    SQL does not parse, it comes back as it is.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("Event", (Column("name", "TEXT"), Column("day", "TEXT"))),), dialect="postgres")
    >>> sql = "SELECT name FROM event WHERE day >= CURRENT_DATE - 7 AND name = " + '"Fair"'
    >>> print(for_schema(sql, s, "postgres"))
    SELECT name FROM "Event" WHERE CAST(day AS TIMESTAMP) >= CURRENT_DATE - 7 AND name = 'Fair'
    """
    names = ("sqlite_strings",) * strings + ("fix_case", "table_case", "text_patterns", "text_dates",
                                             "boolean_numbers", "numbered_fields", "text_numbers")
    return _apply(sql, schema, dialect, *names)


def _apply(sql: str, schema: "Schema", dialect: str, *names: str) -> str:
    """``sql`` with the schema rules ``names`` (:data:`~sqlweave.sql.rules.schema_forms.SCHEMA_FORMS`) applied,
    parsed once and written once (only if one changed it)."""
    ctx = Context(dialect, schema, sql)
    rules = [r for r in SCHEMA_FORMS if r.name in names and r.applies(ctx)]
    if not rules:
        return sql
    tree = _parse(sql, dialect)
    if tree is None:
        return sql
    tree, fired = apply(tree, rules, ctx)
    return tree.sql(dialect=dialect) if fired else sql



# --- case on PostgreSQL ----------------------------------------------------------------------------------


def fix_case(sql: str, schema: "Schema", dialect: str = "postgres") -> str:
    """Spell names as the schema does where PostgreSQL, which matches them by exact spelling, would not find them.

    A table or column whose name has capitals (``"Customer"."Name"``) is only found quoted, and a quoted name
    only as spelt. A name (quoted or not) that matches no name of the schema as PostgreSQL reads it, but matches
    one case-insensitively, is quoted with the schema's spelling; names the query itself defines (aliases,
    CTEs) are left alone, so SQL that would run is never changed.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("Customer", (Column("Id"), Column("city"))),), dialect="postgres")
    >>> fix_case("SELECT id, city FROM customer AS c WHERE c.Id > 1", s)
    'SELECT "Id", city FROM "Customer" AS c WHERE c."Id" > 1'
    """
    return _apply(sql, schema, dialect, "fix_case", "table_case")



# --- text patterns over dates and numbers ----------------------------------------------------------------

#: Declared types whose values LIKE reads as they are (any other known type is not text to PostgreSQL or DuckDB).

def text_patterns(sql: str, schema: "Schema", dialect: str) -> str:
    """Cast a column that is not text to text where ``LIKE`` (or ``ILIKE``) reads it, as SQLite does by itself.

    Models learnt ``WHERE happened LIKE '2020%'`` on SQLite, which keeps dates as ISO text. PostgreSQL and DuckDB
    have no ``LIKE`` for dates, times or numbers (``operator does not exist: date ~~ unknown``), so that SQL would
    fail there; cast to text, a date reads as the same ISO text and a number as its digits. Only columns of a
    known type that is not text, in tables the query reads, are cast, and only on those two engines: SQL that
    would run is never changed.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("event", (Column("name", "VARCHAR"), Column("happened", "DATE"))),), dialect="postgres")
    >>> text_patterns("SELECT name FROM event AS e WHERE e.happened ILIKE '2020%' AND name ILIKE 'w%'", s, "postgres")
    "SELECT name FROM event AS e WHERE CAST(e.happened AS TEXT) ILIKE '2020%' AND name ILIKE 'w%'"
    """
    return _apply(sql, schema, dialect, "text_patterns")



# --- text compared with dates -------------------------------------------------------------------------------

#: Declared types of dates and times (``TIMESTAMP WITH TIME ZONE``, ``DATETIME``, ``DATE``, ``TIME``).

def text_dates(sql: str, schema: "Schema", dialect: str) -> str:
    """Read a text column as a timestamp where the query compares it with a date or a time, as SQLite does.

    Many databases keep dates as ISO text (``'2023-01-05'``), and SQLite compares them with its own date values,
    which are text too. PostgreSQL and DuckDB refuse to compare text with a date (``operator does not exist: text
    >= timestamp without time zone``); cast to ``TIMESTAMP``, the text reads as the date it spells. Only a column
    of a known text type, compared (``=``, ``<``, ``BETWEEN`` ...) with a date column, a cast to a date type,
    ``CURRENT_DATE``, ``NOW()``, date arithmetic or an interval sum, is cast: SQL that would run is never changed.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("visit", (Column("day", "TEXT"), Column("seen", "DATE"))),), dialect="postgres")
    >>> text_dates("SELECT * FROM visit WHERE day >= seen - INTERVAL '14 days' AND day <> 'never'", s, "postgres")
    "SELECT * FROM visit WHERE CAST(day AS TIMESTAMP) >= seen - INTERVAL '14 DAYS' AND day <> 'never'"
    """
    return _apply(sql, schema, dialect, "text_dates")



# --- booleans as numbers -----------------------------------------------------------------------------------


def boolean_numbers(sql: str, schema: "Schema", dialect: str) -> str:
    """A boolean column as SQLite, which has no booleans, reads it: ``= 1`` is true, ``= 0`` false, and its sum
    counts the true rows.

    PostgreSQL refuses ``is_placebo = 1`` (``operator does not exist: boolean = integer``) and ``SUM(is_placebo)``;
    the number becomes ``TRUE`` or ``FALSE``, and a boolean under ``SUM`` or ``AVG`` is cast to an integer. DuckDB
    reads both already. Only columns of the schema's boolean type are touched: SQL that would run is never changed.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("t", (Column("id", "INTEGER"), Column("ok", "BOOLEAN"))),), dialect="postgres")
    >>> boolean_numbers("SELECT SUM(ok), count(*) FROM t WHERE ok = 1 OR id = 1 OR ok <> 0", s, "postgres")
    'SELECT SUM(CAST(ok AS INT)), COUNT(*) FROM t WHERE ok = TRUE OR id = 1 OR ok <> FALSE'
    """
    return _apply(sql, schema, dialect, "boolean_numbers")



# --- number columns compared with date fields --------------------------------------------------------------


def numbered_fields(sql: str, schema: "Schema", dialect: str) -> str:
    """A number column compared with one date field written as text (``year_reg = strftime('%Y', 'now')``), as
    SQLite compares them: as numbers, since the column's type converts the other side.

    PostgreSQL refuses ``integer = text`` and DuckDB an ``INTEGER`` against a ``VARCHAR``; the field
    (``TO_CHAR(d, 'YYYY')``, ``strftime(d, '%Y')``, the weekday's ``CAST(EXTRACT(DOW FROM d) AS TEXT)``) becomes
    an integer. Only a format of one number (a year, a month, a day ...)
    and a column of the schema's number types are touched: SQL that would run is never changed.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("t", (Column("year", "INTEGER"), Column("d", "DATE"))),), dialect="postgres")
    >>> numbered_fields("SELECT count(*) FROM t WHERE year = TO_CHAR(d, 'YYYY')", s, "postgres")
    "SELECT COUNT(*) FROM t WHERE year = CAST(TO_CHAR(d, 'YYYY') AS INT)"
    """
    return _apply(sql, schema, dialect, "numbered_fields")



# --- numbers kept as text ---------------------------------------------------------------------------------

#: A text that spells a number (spaces around it allowed), as PostgreSQL's regular expressions read it.

def text_numbers(sql: str, schema: "Schema", dialect: str) -> str:
    """Read a text column as a number where the query uses it as one: summed or averaged, compared with a
    number, or in arithmetic with one.

    Data loaded from files often keeps numbers as text, because a few rows hold ``'null'``, ``'n/a'`` or nothing
    (Spider's ``cars_data.Horsepower``). PostgreSQL and DuckDB refuse ``AVG(horsepower)`` and ``horsepower >
    150`` on a text column (``function avg(text) does not exist``); the column is read as a number there, and a
    text that spells none as NULL, so ``AVG`` skips it. SQLite would run both, reading ``'null'`` as 0 in a sum
    and comparing the text ``'98'`` above ``'150'``; MySQL and MariaDB compare as numbers too (reading ``'null'``
    as 0). Read as numbers, the answer is the one the question means. Only columns of a known text type are read so, and only where the SQL would
    fail: SQL that would run is never changed (on DuckDB, ``text = 85`` runs while every value spells a number,
    and gives what this gives).

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("car", (Column("id", "INTEGER"), Column("hp", "TEXT"), Column("name", "TEXT"))),),
    ...            dialect="duckdb")
    >>> text_numbers("SELECT AVG(hp) FROM car WHERE hp > 150 AND name = 'ford' AND id = 1", s, "duckdb")
    "SELECT AVG(TRY_CAST(hp AS DOUBLE)) FROM car WHERE TRY_CAST(hp AS DOUBLE) > 150 AND name = 'ford' AND id = 1"

    A JSON value read as text (``doc ->> 'watts'``) is read so too, and ordered against a text that spells a
    number (``> '100'``, which runs and compares text: ``'9' > '100'``) it is compared with that number
    (:func:`_numbers_for_json`); ``= '650'`` is left as written.

    >>> text_numbers("SELECT id FROM car WHERE doc ->> 'watts' > '100' AND doc ->> 'kind' = '9'", s, "duckdb")
    "SELECT id FROM car WHERE TRY_CAST(doc ->> '$.watts' AS DOUBLE) > 100 AND (doc ->> '$.kind') = '9'"
    """
    return _apply(sql, schema, dialect, "text_numbers")



# --- a subquery compared with = that returns several rows ---------------------------------------------------

#: What PostgreSQL, DuckDB, MySQL and MariaDB say when a subquery used as one value returns several rows.
MANY_ROWS = re.compile(r"more than one row returned by a subquery|subquery returns more than 1 row", re.IGNORECASE)


def subqueries_as_sets(sql: str, dialect: str) -> str:
    """``x = (SELECT ...)`` as ``x IN (SELECT ...)``, and ``x <> (SELECT ...)`` as ``NOT x IN (SELECT ...)``.

    A model asked "the employees of the sales departments" writes ``dept_id = (SELECT id FROM dept WHERE name
    LIKE '%sales%')``. SQLite answers it from the subquery's first row alone; PostgreSQL, DuckDB and MySQL refuse
    it once the subquery returns several rows (``more than one row returned by a subquery used as an expression``).
    :meth:`sqlweave.db.Database.execute` runs this form after that error only, so SQL that runs is never
    changed; comparisons other than ``=`` and ``<>`` with such a subquery are left to fail. Comes back unchanged
    when it holds no such comparison or does not parse.

    >>> subqueries_as_sets("SELECT name FROM emp WHERE dept = (SELECT id FROM dept WHERE name LIKE 'S%')", "postgres")
    "SELECT name FROM emp WHERE dept IN (SELECT id FROM dept WHERE name LIKE 'S%')"
    >>> subqueries_as_sets("SELECT name FROM emp WHERE (SELECT id FROM boss) <> dept", "duckdb")
    'SELECT name FROM emp WHERE NOT dept IN (SELECT id FROM boss)'
    """
    tree = _parse(sql, dialect)
    if tree is None:
        return sql
    changed = False
    for cmp in list(tree.find_all(exp.EQ, exp.NEQ)):
        left, right = _unparen(cmp.this), _unparen(cmp.expression)
        for value, query in ((left, right), (right, left)):
            if isinstance(query, exp.Subquery) and value is not None and not isinstance(value, exp.Subquery):
                member = exp.In(this=value.copy(), query=query.copy())
                cmp.replace(member if isinstance(cmp, exp.EQ) else exp.Not(this=member))
                changed = True
                break
    return tree.sql(dialect=dialect) if changed else sql


# --- double-quoted strings ---------------------------------------------------------------------------------


def sqlite_strings(sql: str, schema: "Schema", dialect: str) -> str:
    """A double-quoted name that names nothing, as SQLite reads it: a string (``WHERE language = "English"``).

    SQLite takes ``"English"`` for a string when no column has that name; PostgreSQL and DuckDB read it as a
    column and fail. On those two engines, a double-quoted, unqualified name that is no column of the schema and
    no name the query defines (an alias, a CTE, a derived table's column) becomes the string it spells. SQL that
    would run is never changed.

    >>> from sqlweave.schema import Schema, Table, Column
    >>> s = Schema("x", (Table("event", (Column("name", "VARCHAR"), Column("city", "VARCHAR"))),), dialect="postgres")
    >>> print(sqlite_strings('SELECT "name" FROM event WHERE city = "Paris" OR city LIKE "%yon%"', s, "postgres"))
    SELECT "name" FROM event WHERE city = 'Paris' OR city LIKE '%yon%'
    """
    if '"' not in sql:
        return sql
    return _apply(sql, schema, dialect, "sqlite_strings")


