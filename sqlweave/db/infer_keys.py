"""Keys read from the data, for tables that declare none (data files, and databases that declare no foreign key):
a primary key per table, foreign keys between them.

Data files carry no keys, nor do many databases built by loading files or by tools that skip constraints, and much
of sqlweave leans on them: the schema the model reads (``-> customers``), the join paths, the fan-out cautions, the
rewrite that drops a needless join, the names shown for a key. What the data shows is declared on the DuckDB copy
of data files (:func:`infer_keys`, :func:`declare_keys`), and added to the schema sqlweave reads of a database that
declares no foreign key (:func:`infer_database_keys`, called by :func:`sqlweave.db.introspect.introspect`; the
database is not changed), by conservative rules on names and values:

- **Primary key**: the table's column named ``id``, ``<table>_id`` or ``<table>id`` (the table's name as it is or in
  the singular, case ignored) whose values are all present and all different; without one, the table's first
  column if it is named after its own table as keys are (``AirportCode`` in ``airports``, ``StuID`` in
  ``student``) and not after another table (``film_id`` in ``film_category`` is ``film``'s key), with the same
  values; without one, the first column named as keys are (``apt_id``, ``dept_code``, ``emp_num``) whose values
  hold those of a column of that name in another table, unless a second table has such a first column too.
- **Foreign key**: a column of another table with the key's name (``orders.customer_id`` for
  ``customers.customer_id``), or named ``<table>_id`` when the key is a bare ``id`` (``orders.customer_id`` for
  ``customers.id``); failing that, a column that names the key with a word before it or a number after it
  (``contact_staff_id``, ``club_id_2``) or names the table, alone or after a word, with or without a key's ending
  (``campus`` for ``campuses.id``, ``winning_aircraft`` for ``aircraft.aircraft_id``); of the key's type
  (integers of any width), every present value of which is a key value. A column whose name and values fit two
  tables points at neither.

Of the single-column keys Spider's databases declare, these rules find 89% of the primary keys and 79% of the
foreign keys that point at them on dev's 19 databases, 87% and 79% on the 138 training ones, from which the rules
were written; the foreign keys they find that the files do not declare are real ones the files leave out
(``trip.start_station_id -> station.id``) (``benchmarks/bench_infer_keys.py``, BENCHMARKS.md).

A self-reference under another name (``employees.manager_id``) is not found: only names say what a column points
at, and data alone cannot tell a manager from any other employee.

>>> import duckdb
>>> con = duckdb.connect()
>>> _ = con.execute("CREATE TABLE customers AS SELECT * FROM (VALUES (1, 'Ann'), (2, 'Bo')) t(customer_id, name)")
>>> _ = con.execute("CREATE TABLE orders AS SELECT * FROM (VALUES (10, 1), (11, 1), (12, NULL)) t(id, customer_id)")
>>> keys = infer_keys(con, ["customers", "orders"])
>>> keys.primary, keys.foreign
({'customers': 'customer_id', 'orders': 'id'}, [('orders', 'customer_id', 'customers', 'customer_id')])
>>> declare_keys(con, keys)  # the foreign keys left out (none here)
[]
>>> con.execute("SELECT constraint_type FROM duckdb_constraints() WHERE table_name = 'orders' ORDER BY 1").fetchall()
[('FOREIGN KEY',), ('NOT NULL',), ('PRIMARY KEY',)]
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from ..errors import SqlweaveError

if TYPE_CHECKING:
    from .protocol import Reader
    from ..schema import Column, Table

#: Integer types: a foreign key column of one of them takes its key's type (DuckDB declares a foreign key only
#: between columns of one type).
_INTEGERS = ("INTEGER", "BIGINT", "SMALLINT", "TINYINT", "HUGEINT", "UBIGINT", "UINTEGER", "USMALLINT", "UTINYINT")
#: Column types a key may have (not a float, a date or a blob).
_KEY_TYPES = (*_INTEGERS, "VARCHAR", "UUID")


@dataclass
class Keys:
    """What :func:`infer_keys` found: ``primary`` maps a table to its key column; ``foreign`` holds
    ``(table, column, referred table, referred column)``."""

    primary: dict[str, str] = field(default_factory=dict)
    foreign: list[tuple[str, str, str, str]] = field(default_factory=list)


#: The ending of a key column's name (StuID, AirportCode, service_type_code).
_KEY_LIKE = re.compile(r"(id|code|key)$", re.IGNORECASE)
#: The same, with what separates it (``host_city_id`` names ``city``), and numbers (``emp_num``).
_KEY_END = re.compile(r"(_?(id|code|key)|_(num|no|number))$", re.IGNORECASE)
#: Key names that say nothing of their table: ``country_code`` may mean any table keyed by ``code``.
_GENERIC = frozenset({"id", "code", "key", "num", "no", "number", "name"})


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _forms(table: str) -> set[str]:
    """The table's name, lower case, as it is and in the singular (``categories`` -> ``category``; ``movies`` ->
    ``movie``; ``coaches`` -> ``coach`` and ``coache``: either is possible after ``-ies`` and ``-es``)."""
    t = table.lower()
    forms = {t}
    if t.endswith("ies") and len(t) > 4:
        forms |= {t[:-3] + "y", t[:-1]}
    elif t.endswith("s") and not t.endswith("ss") and len(t) > 3:
        forms.add(t[:-1])
        if t.endswith("es"):
            forms.add(t[:-2])
    return forms


def _columns(con: Any, table: str) -> list[tuple[str, str]]:
    return [(r[0], str(r[1]).upper()) for r in con.execute(f"DESCRIBE {_q(table)}").fetchall()]


class _Probe(Protocol):
    """What the rules ask of the data: a table's columns with their DuckDB type names, one value a query gives
    (None when it fails), a name quoted for the engine, and the rows of a table a check reads (``FROM`` what)."""

    def columns(self, table: str) -> list[tuple[str, str]]: ...

    def one(self, sql: str) -> Any: ...

    def q(self, name: str) -> str: ...

    def rows(self, table: str, alias: str) -> str: ...


class _DuckProbe:
    def __init__(self, con: Any) -> None:
        self.con = con

    def columns(self, table: str) -> list[tuple[str, str]]:
        return _columns(self.con, table)

    def one(self, sql: str) -> Any:
        try:
            row = self.con.execute(sql).fetchone()
        except Exception:  # noqa: BLE001 - a comparison DuckDB refuses (types that do not compare) is no key
            return None
        return row[0] if row else None

    def q(self, name: str) -> str:
        return _q(name)

    def rows(self, table: str, alias: str) -> str:
        return f"{_q(table)} AS {alias}"


class _DatabaseProbe:
    """Reads through :meth:`sqlweave.db.Database.trusted_read` (read-only, under the access policy), each query
    for at most 5 s and all of them within the budget; past it, or when a query fails, a rule finds no key."""

    def __init__(self, db: "Reader", tables: Sequence["Table"], budget_s: float,
                 sampled: dict[str, int] | None = None, sample_rows: int = 100_000) -> None:
        self.db = db
        self.kinds = {t.name: [(c.name, _kind(c)) for c in t.columns] for t in tables}
        self.deadline = time.monotonic() + budget_s
        #: the tables read on a sample, with their number of rows
        self.sampled = dict(sampled or {})
        self.sample_rows = sample_rows

    def columns(self, table: str) -> list[tuple[str, str]]:
        return self.kinds[table]

    def one(self, sql: str) -> Any:
        left = self.deadline - time.monotonic()
        if left <= 0.05:
            self.db.connection.reads_cut_short += 1  # what this query would have shown depends on the machine's speed
            return None
        try:
            rows = self.db.trusted_read(sql, timeout_s=min(_QUERY_S, left), max_rows=1).rows
        except SqlweaveError:  # types that do not compare, a table the access policy filters, time out
            return None
        return rows[0][0] if rows else None

    def q(self, name: str) -> str:
        return self.db.quote(name)

    def rows(self, table: str, alias: str) -> str:
        """The table as ``alias``, or for a large one the same sample of its rows on every run: PostgreSQL's blocks
        drawn with a fixed seed, DuckDB's rows drawn with one, the first rows as stored on SQLite, MySQL and
        MariaDB."""
        name = self.q(table)
        count = self.sampled.get(table)
        if count is None:
            return f"{name} AS {alias}"
        n = self.sample_rows
        backend = self.db.backend
        if backend == "postgresql":
            return f"{name} AS {alias} TABLESAMPLE SYSTEM ({min(100.0, 100.0 * n / count):.6f}) REPEATABLE (0)"
        if backend == "duckdb":
            return f"(SELECT * FROM {name} USING SAMPLE reservoir({n} ROWS) REPEATABLE (0)) AS {alias}"
        return f"(SELECT * FROM {name} LIMIT {n}) AS {alias}"


#: Seconds one query of :func:`infer_database_keys` may take.
_QUERY_S = 5.0

#: Declared integer types of SQL databases, read as DuckDB's ``BIGINT``.
_SQL_INTEGERS = {"INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "MEDIUMINT", "INT2", "INT4", "INT8", "SERIAL",
                 "BIGSERIAL", "SMALLSERIAL"}


def _kind(column: "Column") -> str:
    """A column's declared type as the rules name it: ``BIGINT`` for an integer, ``VARCHAR`` for text (and SQLite's
    columns without a type), ``UUID``; other types as declared (no key)."""
    base = column.type.upper().split("(")[0].replace("UNSIGNED", "").strip()
    if base in _SQL_INTEGERS or base in _INTEGERS:
        return "BIGINT"
    if column.is_text:
        return "VARCHAR"
    return base


def infer_keys(con: Any, tables: Sequence[str]) -> Keys:
    """The keys the data of ``tables`` (on the DuckDB connection ``con``) shows, by the rules above."""
    return _infer(_DuckProbe(con), tables)


def infer_database_keys(db: "Reader", tables: Sequence["Table"], *, budget_s: float = 20.0,
                        max_rows: int = 1_000_000, sample_rows: int = 100_000) -> Keys:
    """The keys the data of ``tables`` shows on ``db``, any engine, by the rules above: a table's declared
    one-column primary key is kept, the others are looked for. The queries read through
    :meth:`~sqlweave.db.Database.trusted_read` and stop after ``budget_s`` seconds in all (5 s each): what is not
    checked by then is no key. A table of more than ``max_rows`` rows (as its ``row_count`` says), such as a fact
    table, is read on a sample of ``sample_rows`` of its rows, the same on every run: its foreign keys are those
    whose values in the sample are all key values of the other table, and no primary key is looked for in it
    (that takes every row). So every check reads a bounded number of rows, and which keys are found does not
    depend on the machine's speed. Nothing is written to the database.

    >>> from sqlweave.database import Database
    >>> from sqlweave.db.demo import demo_database_path
    >>> db = Database.open(demo_database_path())
    >>> keys = infer_database_keys(db, db.schema().tables)
    >>> keys.primary["customers"], ("orders", "customer_id", "customers", "customer_id") in keys.foreign
    ('customer_id', True)
    """
    large = {t.name: t.row_count for t in tables if t.row_count is not None and t.row_count > max_rows}
    declared = {t.name: t.primary_key[0] for t in tables if len(t.primary_key) == 1}
    composite = {t.name for t in tables if len(t.primary_key) > 1}  # keyed already, by several columns
    probe = _DatabaseProbe(db, tables, budget_s, large, sample_rows)
    return _infer(probe, [t.name for t in tables], declared, composite | set(large))


def _infer(con: _Probe, tables: Sequence[str], declared: dict[str, str] | None = None,
           composite: set[str] | frozenset[str] = frozenset()) -> Keys:
    """The rules above, on what ``con`` reads; ``declared`` holds the one-column primary keys tables already
    declare (kept, and not looked for), ``composite`` the tables keyed by several columns or read on a sample (no
    key looked for)."""
    keys = Keys(primary=dict(declared or {}))
    columns = {t: con.columns(t) for t in tables}
    key_names = {t: {f"{form}{sep}id" for form in _forms(t) for sep in ("_", "")} for t in tables}
    for t in tables:
        if t in keys.primary or t in composite:
            continue
        named = [(name, kind) for name, kind in columns[t] if name.lower() in key_names[t] | {"id"}]
        if not named and columns[t]:
            # the first column, when it is named after its table as keys are (AirportCode in airports, StuID in
            # student, service_type_code in ref_service_types) and not after another table (film_id in
            # film_category is film's)
            first = columns[t][0][0].lower()
            stem = _KEY_LIKE.sub("", first).rstrip("_")
            others = set().union(*(key_names[o] for o in tables if o != t))
            if len(stem) >= 2 and first not in others and any(stem in f or f.startswith(stem) for f in _forms(t)):
                named = columns[t][:1]
        for name, kind in named:
            if kind in _KEY_TYPES and _unique(con, t, name):
                keys.primary[t] = name
                break
    # a first column named as keys are but not after its table (apt_id in apartments, dept_code in department),
    # whose name another table's column has and whose values hold that column's values
    having: dict[str, list[tuple[str, str, str]]] = {}
    for t in tables:
        for name, kind in columns[t]:
            having.setdefault(name.lower(), []).append((t, name, kind))
    for t in tables:
        if t in keys.primary or t in composite or not columns[t]:
            continue
        first, kind = columns[t][0]
        c = first.lower()
        if kind not in _KEY_TYPES or not _KEY_END.search(c) or c in {k.lower() for k in keys.primary.values()}:
            continue
        referring = [(o, name, k) for o, name, k in having[c] if o != t and _comparable(k, kind)]
        if any(name == columns[o][0][0] and o not in keys.primary and _unique(con, o, name)
               for o, name, _ in referring):
            continue  # two tables keyed by the same name: which one the others point at is not known
        if _unique(con, t, first) and any(_within(con, o, name, t, first) for o, name, _ in referring):
            keys.primary[t] = first
    for t in tables:
        for name, kind in columns[t]:
            if kind not in _KEY_TYPES or keys.primary.get(t) == name:
                continue
            for rule in (_named_as_key, _named_after_table):
                targets = [(ref, key) for ref, key in keys.primary.items()
                           if ref != t and _comparable(kind, dict(columns[ref])[key]) and rule(name, ref, key)]
                if targets:
                    break
            # of the tables its name may point at, the one whose key holds every value (none if several do)
            held = [(ref, key) for ref, key in targets if _within(con, t, name, ref, key)]
            if len(held) == 1:
                keys.foreign.append((t, name, *held[0]))
    return keys


def _unique(con: _Probe, table: str, column: str) -> bool:
    """Whether ``table`` has rows and ``column`` holds a value in each, a different one."""
    c = con.q(column)
    return bool(con.one(f"SELECT COUNT(*) > 0 AND COUNT(DISTINCT {c}) = COUNT(*) AND COUNT({c}) = COUNT(*) "
                        f"FROM {con.rows(table, 't')}"))


def _comparable(kind: str, key_kind: str) -> bool:
    """DuckDB declares a foreign key only between columns of one type (integers are widened)."""
    return kind == key_kind or (kind in _INTEGERS and key_kind in _INTEGERS)


def _within(con: _Probe, table: str, column: str, ref: str, key: str) -> bool:
    """Whether ``table.column`` holds a value and every value it holds is one of ``ref.key`` (a key: its values
    are all different, so the join repeats no row)."""
    c, k = con.q(column), con.q(key)
    return bool(con.one(f"SELECT COUNT(t.{c}) > 0 AND COALESCE(SUM(CASE WHEN t.{c} IS NOT NULL AND r.{k} IS NULL "
                        f"THEN 1 ELSE 0 END), 0) = 0 FROM {con.rows(table, 't')} LEFT JOIN {con.q(ref)} AS r "
                        f"ON t.{c} = r.{k}"))


def _named_as_key(column: str, ref: str, key: str) -> bool:
    """``column`` has the key's name (``customer_id`` for ``customers.customer_id``), or is ``<table>_id`` for a
    bare ``id``."""
    c, k = column.lower(), key.lower()
    if k == "id":
        return c in {f"{form}{sep}id" for form in _forms(ref) for sep in ("_", "")}
    return c == k


def _named_after_table(column: str, ref: str, key: str) -> bool:
    """``column`` names the key with a word before it or a number after it (``contact_staff_id`` and
    ``club_id_2`` for ``staff_id`` and ``club_id``), or names the table, with a word before it or a key's ending
    after it (``campus`` for ``campuses.id``, ``winning_aircraft`` for ``aircraft.aircraft_id``,
    ``host_city_id`` for ``city.city_id``)."""
    c, k = column.lower(), key.lower()
    if k not in _GENERIC and (c.endswith(f"_{k}") or re.fullmatch(rf"{re.escape(k)}_?\d+", c)):
        return True
    stem = _KEY_END.sub("", c) or c
    return any(stem == form or stem.endswith(f"_{form}") for form in _forms(ref))


def declare_keys(con: Any, keys: Keys) -> list[tuple[str, str, str, str]]:
    """Declare ``keys`` on their tables (each rebuilt with its constraints, the tables it refers to first, each in a
    transaction of its own). Returns the foreign keys left out: those that close a cycle, which DuckDB cannot
    declare, and those of a table DuckDB refused to rebuild, which stays as it was loaded, without keys."""
    import duckdb

    refers: dict[str, list[tuple[str, str, str, str]]] = {}
    for fk in keys.foreign:
        refers.setdefault(fk[0], []).append(fk)
    done: set[str] = set()
    refused: set[str] = set()
    visiting: set[str] = set()
    left_out: list[tuple[str, str, str, str]] = []

    def build(t: str) -> None:
        if t in done or t in refused:
            return
        visiting.add(t)
        kept = []
        for fk in refers.get(t, []):
            if fk[2] not in visiting:
                build(fk[2])
            if fk[2] in visiting or fk[2] in refused:
                left_out.append(fk)
            else:
                kept.append(fk)
        visiting.discard(t)
        # a foreign key column of integers takes its key's integer type (INTEGER -> BIGINT)
        widened = {c: dict(_columns(con, rt))[rc] for _, c, rt, rc in kept}
        defs = [f"{_q(name)} {widened[name] if name in widened and kind in _INTEGERS else kind}"
                for name, kind in _columns(con, t)]
        if t in keys.primary:
            defs.append(f"PRIMARY KEY ({_q(keys.primary[t])})")
        defs += [f"FOREIGN KEY ({_q(c)}) REFERENCES {_q(rt)} ({_q(rc)})" for _, c, rt, rc in kept]
        loading = f"__sqlweave_loading_{len(done)}"
        try:
            con.begin()
            con.execute(f"ALTER TABLE {_q(t)} RENAME TO {_q(loading)}")
            con.execute(f"CREATE TABLE {_q(t)} ({', '.join(defs)})")
            con.execute(f"INSERT INTO {_q(t)} SELECT * FROM {_q(loading)}")
            con.execute(f"DROP TABLE {_q(loading)}")
            con.commit()
            done.add(t)
        except duckdb.Error:
            con.rollback()
            refused.add(t)
            left_out.extend(kept)

    for t in dict.fromkeys([*keys.primary, *refers]):
        build(t)
    return left_out
