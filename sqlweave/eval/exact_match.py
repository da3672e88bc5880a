"""Spider's exact-set-match (component matching), verdict for verdict as the official evaluator.

Reproduces ``evaluation.py`` of ``taoyds/test-suite-sql-eval`` (see :data:`OFFICIAL`): the
prediction has ``value`` replaced by ``1``, both queries are read by Spider's own reader
(:mod:`sqlweave.eval.spider_parse`; a prediction it rejects is scored as an empty query,
so 0), values are dropped (``DISABLE_VALUE``) and DISTINCT flags too (``DISABLE_DISTINCT``)
at the top level and in set operations, columns of the FROM tables that a foreign key joins
count as one column (``kmap``, built from ``tables.json`` as the official script does, or
from the database's declared foreign keys), and then every component (SELECT, WHERE,
GROUP BY, HAVING, ORDER BY, AND/OR, INTERSECT/UNION/EXCEPT, keywords) must match as a set,
and the FROM tables must be the same.

As in the official script, nested queries inside conditions are compared as they were
read (their DISTINCT flags and foreign-key columns are not normalised), join conditions are
not compared except for the ``or`` keyword they may hold, and a ``LIMIT`` counts only by
its presence.

>>> exact_match("SELECT name FROM singer WHERE age > 30", "select Name from SINGER where age > 45")
True
>>> exact_match("SELECT name FROM singer ORDER BY age", "SELECT name FROM singer ORDER BY age DESC")
False
"""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

from ..resources import Resources, shared_resources
from ..schema import Schema
from ..errors import SQLParseError
from .spider_parse import WHERE_OPS, SchemaDict, SpiderSQL, empty_sql, parse_spider

#: The official script this module reproduces (repository and commit).
OFFICIAL = "taoyds/test-suite-sql-eval@e97acc546ecbee8fa27fa8dbf025ef61493a876c evaluation.py + process_sql.py"

KMap = dict[str, str]


# --- schema and foreign-key map ---------------------------------------------------------------


#: SQLite files' tables and ``tables.json`` files' maps a :class:`~sqlweave.resources.Resources` keeps read, by
#: resolved path (least recently used out first), and the kinds they are kept under.
SQLITE_SCHEMAS = 256
TABLES_JSONS = 16
SQLITE_SCHEMA = "sqlite_schema"
TABLES_JSON = "tables_json_kmaps"


def _read_sqlite_schema(path: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [str(t[0]).lower() for t in conn.execute("SELECT name FROM sqlite_master WHERE type='table';")]
        return tuple((t, tuple(str(c[1]).lower() for c in conn.execute(f"PRAGMA table_info({t})"))) for t in tables)
    finally:
        conn.close()


def sqlite_schema(path: str | Path, resources: Resources | None = None) -> SchemaDict:
    """The official ``get_schema``: every table of ``sqlite_master`` with its columns, lower case (read once per
    file and kept by ``resources``, default :func:`~sqlweave.resources.shared_resources`).

    >>> import sqlite3, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "d.sqlite")
    >>> sqlite3.connect(p).execute("CREATE TABLE Singer (Name TEXT, age INT)").connection.close()
    >>> sqlite_schema(p)
    {'singer': ['name', 'age']}
    """
    key = str(Path(path).resolve())
    res = resources if resources is not None else shared_resources()
    found = res.get(SQLITE_SCHEMA, key, lambda: _read_sqlite_schema(key), keep=SQLITE_SCHEMAS)
    return {t: list(cols) for t, cols in found}


def schema_dict(schema: Schema) -> SchemaDict:
    """A sqlweave :class:`Schema` as the official reader's ``{table: [columns]}``."""
    return {t.name.lower(): [c.lower() for c in t.column_names] for t in schema.tables}


def build_foreign_key_map(entry: dict[str, Any]) -> KMap:
    """The official ``build_foreign_key_map`` of one ``tables.json`` entry (its grouping quirks included).

    >>> e = {"table_names_original": ["a", "b"], "column_names_original": [[-1, "*"], [0, "id"], [1, "a_id"]],
    ...      "foreign_keys": [[2, 1]]}
    >>> build_foreign_key_map(e)
    {'__a.id__': '__a.id__', '__b.a_id__': '__a.id__'}
    """
    tables = entry["table_names_original"]
    cols = [f"__{tables[t].lower()}.{c.lower()}__" if t >= 0 else "__all__" for t, c in entry["column_names_original"]]
    key_sets: list[set[int]] = []
    for k1, k2 in entry["foreign_keys"]:
        for ks in key_sets:
            if k1 in ks or k2 in ks:
                break
        else:
            ks = set()
            key_sets.append(ks)
        ks.add(k1)
        ks.add(k2)
    out: KMap = {}
    for ks in key_sets:
        ordered = sorted(ks)
        for idx in ordered:
            out[cols[idx]] = cols[ordered[0]]
    return out


def _read_tables_json(path: str) -> dict[str, KMap]:
    return {e["db_id"]: build_foreign_key_map(e) for e in json.loads(Path(path).read_text(encoding="utf-8"))}


def tables_json_kmaps(path: str | Path, resources: Resources | None = None) -> dict[str, KMap]:
    """``db_id`` -> foreign-key map, from a Spider ``tables.json`` (the official ``build_foreign_key_map_from_json``),
    read once per file and kept by ``resources`` (default :func:`~sqlweave.resources.shared_resources`)."""
    key = str(Path(path).resolve())
    res = resources if resources is not None else shared_resources()
    return res.get(TABLES_JSON, key, lambda: _read_tables_json(key), keep=TABLES_JSONS)


def schema_kmap(schema: Schema) -> KMap:
    """The foreign-key map of a database's declared foreign keys, numbered as ``tables.json`` would number them."""
    cols = [(-1, "*")]
    index: dict[tuple[str, str], int] = {}
    names = [t.name for t in schema.tables]
    for ti, t in enumerate(schema.tables):
        for c in t.column_names:
            index[(t.name.lower(), c.lower())] = len(cols)
            cols.append((ti, c))
    fks = []
    for fk in schema.foreign_keys:
        a = index.get((fk.table.lower(), fk.column.lower()))
        b = index.get((fk.ref_table.lower(), fk.ref_column.lower()))
        if a is not None and b is not None:
            fks.append([a, b])
    return build_foreign_key_map({"table_names_original": names, "column_names_original": cols, "foreign_keys": fks})


def kmap_for(db_path: str | Path | None, schema: Schema | None) -> KMap:
    """The foreign-key map the official script would use for the database at ``db_path``.

    Spider's layout keeps ``tables.json`` beside ``database/<db_id>/<db_id>.sqlite``; the map is
    read from there when present, else from the database's declared foreign keys.
    """
    if db_path is not None:
        p = Path(db_path)
        tables = p.parent.parent.parent / "tables.json"
        if tables.is_file():
            kmaps = tables_json_kmaps(tables)
            if p.stem in kmaps:
                return kmaps[p.stem]
    return schema_kmap(schema) if schema is not None else {}


# --- the official rebuild_sql_val / rebuild_sql_col ------------------------------------------------


def _rebuild_cond_unit_val(cu: Any) -> Any:
    if cu is None:
        return cu
    not_op, op_id, val_unit, val1, val2 = cu
    val1 = rebuild_sql_val(val1) if type(val1) is dict else None
    val2 = rebuild_sql_val(val2) if type(val2) is dict else None
    return not_op, op_id, val_unit, val1, val2


def _rebuild_condition_val(condition: Any) -> Any:
    if condition is None:
        return condition
    return [_rebuild_cond_unit_val(it) if i % 2 == 0 else it for i, it in enumerate(condition)]


def rebuild_sql_val(sql: SpiderSQL | None) -> SpiderSQL | None:
    """Drop values (in place, as the official script): literals in conditions become ``None``."""
    if sql is None:
        return sql
    sql["from"]["conds"] = _rebuild_condition_val(sql["from"]["conds"])
    sql["having"] = _rebuild_condition_val(sql["having"])
    sql["where"] = _rebuild_condition_val(sql["where"])
    for op in ("intersect", "except", "union"):
        sql[op] = rebuild_sql_val(sql[op])
    return sql


def build_valid_col_units(table_units: list[Any], schema: SchemaDict) -> list[str]:
    """Columns of the FROM tables (only those the foreign-key map may rewrite)."""
    prefixes = [tu[1][:-2] for tu in table_units if tu[0] == "table_unit"]
    out = []
    for t, cols in schema.items():
        for c in cols:
            value = f"__{t.lower()}.{c.lower()}__"
            if value[:value.index(".")] in prefixes:
                out.append(value)
    return out


def _col_unit(valid: list[str], cu: Any, kmap: KMap) -> Any:
    if cu is None:
        return cu
    agg_id, col_id, _distinct = cu
    if col_id in kmap and col_id in valid:
        col_id = kmap[col_id]
    return agg_id, col_id, None


def _val_unit(valid: list[str], vu: Any, kmap: KMap) -> Any:
    if vu is None:
        return vu
    op, c1, c2 = vu
    return op, _col_unit(valid, c1, kmap), _col_unit(valid, c2, kmap)


def _condition_col(valid: list[str], condition: list[Any], kmap: KMap) -> list[Any]:
    for i in range(0, len(condition), 2):
        not_op, op_id, vu, v1, v2 = condition[i]
        condition[i] = (not_op, op_id, _val_unit(valid, vu, kmap), v1, v2)
    return condition


def rebuild_sql_col(valid: list[str], sql: SpiderSQL | None, kmap: KMap) -> SpiderSQL | None:
    """Foreign-key columns to one representative and DISTINCT flags off (in place, as the official script)."""
    if sql is None:
        return sql
    sel = sql["select"]
    if sel is not None:
        sql["select"] = (None, [(agg, _val_unit(valid, vu, kmap)) for agg, vu in sel[1]])
    sql["from"]["conds"] = _condition_col(valid, sql["from"]["conds"], kmap)
    sql["where"] = _condition_col(valid, sql["where"], kmap)
    sql["groupBy"] = [_col_unit(valid, cu, kmap) for cu in sql["groupBy"]] if sql["groupBy"] is not None else None
    if sql["orderBy"]:
        direction, units = sql["orderBy"]
        sql["orderBy"] = (direction, [_val_unit(valid, vu, kmap) for vu in units])
    sql["having"] = _condition_col(valid, sql["having"], kmap)
    for op in ("intersect", "except", "union"):
        sql[op] = rebuild_sql_col(valid, sql[op], kmap)
    return sql


# --- the official Evaluator ------------------------------------------------------------------------


def _scores(count: int, pred_total: int, label_total: int) -> bool:
    return pred_total == label_total and count == pred_total


def _match_list(pred: list[Any], label: list[Any]) -> int:
    label = list(label)
    cnt = 0
    for u in pred:
        if u in label:
            cnt += 1
            label.remove(u)
    return cnt


def _keywords(s: SpiderSQL) -> set[str]:
    res = set()
    for key, word in (("where", "where"), ("groupBy", "group"), ("having", "having")):
        if len(s[key]) > 0:
            res.add(word)
    if len(s["orderBy"]) > 0:
        res.add(s["orderBy"][0])
        res.add("order")
    if s["limit"] is not None:
        res.add("limit")
    for key in ("except", "union", "intersect"):
        if s[key] is not None:
            res.add(key)
    words = s["from"]["conds"][1::2] + s["where"][1::2] + s["having"][1::2]
    if "or" in words:
        res.add("or")
    conds = s["from"]["conds"][::2] + s["where"][::2] + s["having"][::2]
    if any(c[0] for c in conds):
        res.add("not")
    if any(c[1] == WHERE_OPS.index("in") for c in conds):
        res.add("in")
    if any(c[1] == WHERE_OPS.index("like") for c in conds):
        res.add("like")
    return res


def partial_match(pred: SpiderSQL, label: SpiderSQL) -> dict[str, bool]:
    """Per-component match, as the official ``eval_partial_match`` (F1 == 1 for each).

    >>> from sqlweave.eval.spider_parse import parse_spider
    >>> s = {"t": ["a", "b"]}
    >>> partial_match(parse_spider("SELECT a FROM t ORDER BY a", s), parse_spider("SELECT a FROM t ORDER BY b", s))["order"]
    False
    """
    ps, ls = pred["select"][1], label["select"][1]
    pw, lw = pred["where"][::2], label["where"][::2]

    def group_col(c: Any) -> str:
        return c[1].split(".")[1] if "." in c[1] else c[1]

    pg = [group_col(c) for c in pred["groupBy"]]
    lg = [group_col(c) for c in label["groupBy"]]
    res = {
        "select": _scores(_match_list(ps, ls), len(ps), len(ls)),
        "select(no AGG)": _scores(_match_list([u[1] for u in ps], [u[1] for u in ls]), len(ps), len(ls)),
        "where": _scores(_match_list(pw, lw), len(pw), len(lw)),
        "where(no OP)": _scores(_match_list([u[2] for u in pw], [u[2] for u in lw]), len(pw), len(lw)),
        "group(no Having)": _scores(_match_list(pg, lg), len(pg), len(lg)),
    }
    p_has, l_has = int(len(pred["groupBy"]) > 0), int(len(label["groupBy"]) > 0)
    having_ok = (p_has == l_has == 1 and [c[1] for c in pred["groupBy"]] == [c[1] for c in label["groupBy"]]
                 and pred["having"] == label["having"])
    res["group"] = _scores(int(having_ok), p_has, l_has)
    p_ord, l_ord = int(len(pred["orderBy"]) > 0), int(len(label["orderBy"]) > 0)
    order_ok = (l_ord == 1 and pred["orderBy"] == label["orderBy"]
                and ((pred["limit"] is None) == (label["limit"] is None)))
    res["order"] = _scores(int(order_ok), p_ord, l_ord)
    res["and/or"] = set(pred["where"][1::2]) == set(label["where"][1::2])
    lt = pt = cnt = 0
    for key in ("intersect", "except", "union"):
        p, l = pred[key], label[key]
        pt += p is not None
        lt += l is not None
        if p is not None and l is not None:
            cnt += _exact(p, l)
    res["IUEN"] = _scores(cnt, pt, lt)
    pk, lk = _keywords(pred), _keywords(label)
    res["keywords"] = _scores(len(pk & lk), len(pk), len(lk))
    return res


def _table_sort_key(unit: tuple[str, Any]) -> tuple[str, str]:
    # The official script sorts the units with Python's ordering; tuples of two strings sort the same way here.
    return (unit[0], unit[1] if isinstance(unit[1], str) else repr(unit[1]))


def _exact(pred: SpiderSQL, label: SpiderSQL) -> bool:
    if not all(partial_match(pred, label).values()):
        return False
    if len(label["from"]["table_units"]) > 0:
        return (sorted(label["from"]["table_units"], key=_table_sort_key)
                == sorted(pred["from"]["table_units"], key=_table_sort_key))
    return True


def official_prediction(pred: str) -> str:
    """The prediction as the official script reads it: ``value`` (lower case, anywhere) becomes ``1``.

    >>> official_prediction("SELECT name FROM t WHERE a = 'value'")
    "SELECT name FROM t WHERE a = '1'"
    """
    return pred.replace("value", "1")


def exact_match_parsed(gold: SpiderSQL, pred: SpiderSQL | None, schema: SchemaDict, kmap: KMap) -> bool:
    """Exact-set-match of two queries already read by :func:`parse_spider` (``pred`` None: rejected)."""
    g = copy.deepcopy(gold)
    p = copy.deepcopy(pred) if pred is not None else empty_sql()
    g_rebuilt = rebuild_sql_col(build_valid_col_units(g["from"]["table_units"], schema), rebuild_sql_val(g), kmap)
    p_rebuilt = rebuild_sql_col(build_valid_col_units(p["from"]["table_units"], schema), rebuild_sql_val(p), kmap)
    assert g_rebuilt is not None and p_rebuilt is not None  # both rebuild_* return a dict they are given
    return _exact(p_rebuilt, g_rebuilt)


def _guess_schema(*sqls: str, dialect: str = "sqlite") -> SchemaDict:
    """A schema read off the queries themselves, for scoring without a database.

    Every table named keeps the columns qualified with it; an unqualified column is given to
    every table of the queries (the reader then resolves it to the first FROM table).
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    tables: dict[str, set[str]] = {}
    loose: set[str] = set()
    for sql in sqls:
        try:
            tree = sqlglot.parse_one(sql, read=dialect)
        except SqlglotError:
            continue
        if tree is None:
            continue
        aliases = {}
        for t in tree.find_all(exp.Table):
            tables.setdefault(t.name.lower(), set())
            aliases[(t.alias or t.name).lower()] = t.name.lower()
        for c in tree.find_all(exp.Column):
            if isinstance(c.this, exp.Star):
                continue
            if c.table:
                tables.setdefault(aliases.get(c.table.lower(), c.table.lower()), set()).add(c.name.lower())
            else:
                loose.add(c.name.lower())
    return {t: sorted(cols | loose) for t, cols in tables.items()}


def exact_match(gold: str, pred: str, schema: Schema | SchemaDict | None = None, dialect: str = "sqlite",
                *, kmap: KMap | None = None) -> bool:
    """Spider exact-set-match of ``pred`` against ``gold``; a query the Spider reader rejects scores False.

    ``schema`` is the database's (a :class:`Schema` or ``{table: [columns]}``); without it, one is
    read off the two queries. ``kmap`` defaults to the schema's foreign keys.
    """
    if schema is None:
        lists = _guess_schema(gold, pred, dialect=dialect)
    elif isinstance(schema, Schema):
        lists = schema_dict(schema)
    else:
        lists = {t.lower(): [c.lower() for c in cols] for t, cols in schema.items()}
    if kmap is None:
        kmap = schema_kmap(schema) if isinstance(schema, Schema) else {}
    try:
        label = parse_spider(gold, lists)
    except SQLParseError:
        return False  # the official script stops on such a gold query; here it is a miss, never a crash
    try:
        guess: SpiderSQL | None = parse_spider(official_prediction(pred), lists)
    except SQLParseError:
        guess = None
    return exact_match_parsed(label, guess, lists, kmap)
