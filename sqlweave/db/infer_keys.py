"""Keys read from the data, for tables that declare none (data files): a primary key per table, foreign keys
between them.

Data files carry no keys, and much of sqlweave leans on them: the schema the model reads (``-> customers``), the
join paths, the fan-out cautions, the rewrite that drops a needless join. What the data shows is declared on the
DuckDB copy of the files, by conservative rules on names and values:

- **Primary key**: the table's column named ``id``, ``<table>_id`` or ``<table>id`` (the table's name as it is or in
  the singular, case ignored) whose values are all present and all different; without one, the table's first
  column if it is named after its own table as keys are (``AirportCode`` in ``airports``, ``StuID`` in
  ``student``) and not after another table (``film_id`` in ``film_category`` is ``film``'s key), with the same
  values. Of the single-column keys Spider's databases declare, 86% are found on dev's 19 databases and 81% on
  the 138 training ones (``benchmarks/bench_infer_keys.py``, BENCHMARKS.md).
- **Foreign key**: a column of another table with the key's name (``orders.customer_id`` for
  ``customers.customer_id``), or named ``<table>_id`` when the key is a bare ``id`` (``orders.customer_id`` for
  ``customers.id``), of the key's type (integers of any width), every present value of which is a key value. A
  column that could point at two tables points at neither. This finds 66% of the declared foreign keys that point
  at a single-column key, on dev's databases and on the training ones, and none that dev's do not declare.

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
from dataclasses import dataclass, field
from typing import Any, Sequence

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


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _forms(table: str) -> set[str]:
    """The table's name, lower case, as it is and in the singular (``categories`` -> ``category``; ``coaches`` ->
    ``coach`` and ``coache``, either being possible after ``-es``)."""
    t = table.lower()
    forms = {t}
    if t.endswith("ies") and len(t) > 4:
        forms.add(t[:-3] + "y")
    elif t.endswith("s") and not t.endswith("ss") and len(t) > 3:
        forms.add(t[:-1])
        if t.endswith("es"):
            forms.add(t[:-2])
    return forms


def _columns(con: Any, table: str) -> list[tuple[str, str]]:
    return [(r[0], str(r[1]).upper()) for r in con.execute(f"DESCRIBE {_q(table)}").fetchall()]


def _one(con: Any, sql: str) -> Any:
    try:
        row = con.execute(sql).fetchone()
    except Exception:  # noqa: BLE001 - a comparison DuckDB refuses (types that do not compare) is no key
        return None
    return row[0] if row else None


def infer_keys(con: Any, tables: Sequence[str]) -> Keys:
    """The keys the data of ``tables`` (on the DuckDB connection ``con``) shows, by the rules above."""
    keys = Keys()
    columns = {t: _columns(con, t) for t in tables}
    key_names = {t: {f"{form}{sep}id" for form in _forms(t) for sep in ("_", "")} for t in tables}
    for t in tables:
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
            if kind in _KEY_TYPES and _one(
                    con, f"SELECT COUNT(*) > 0 AND COUNT(DISTINCT {_q(name)}) = COUNT(*) AND COUNT({_q(name)}) = "
                         f"COUNT(*) FROM {_q(t)}"):
                keys.primary[t] = name
                break
    for t in tables:
        for name, kind in columns[t]:
            if kind not in _KEY_TYPES or keys.primary.get(t) == name:
                continue
            targets = []
            for ref, key in keys.primary.items():
                if ref == t:
                    continue
                if name.lower() == key.lower() if key.lower() != "id" else \
                        name.lower() in {f"{form}{sep}id" for form in _forms(ref) for sep in ("_", "")}:
                    targets.append((ref, key))
            if len(targets) != 1:
                continue
            ref, key = targets[0]
            key_kind = dict(columns[ref])[key]
            if kind != key_kind and not (kind in _INTEGERS and key_kind in _INTEGERS):
                continue  # DuckDB declares a foreign key only between columns of one type (integers are widened)
            if _one(con, f"SELECT COUNT({_q(name)}) > 0 AND COUNT(*) FILTER (WHERE {_q(name)} IS NOT NULL AND "
                         f"{_q(name)} NOT IN (SELECT {_q(key)} FROM {_q(ref)})) = 0 FROM {_q(t)}"):
                keys.foreign.append((t, name, ref, key))
    return keys


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
