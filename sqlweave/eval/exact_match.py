"""Spider's exact-set-match (component matching), for reference next to execution accuracy.

As the official evaluator: both queries are read into Spider's structure, values are
dropped (``DISABLE_VALUE``), DISTINCT flags are dropped (``DISABLE_DISTINCT``), columns
joined by a foreign key count as one column, and then every component (SELECT, WHERE,
GROUP BY, HAVING, ORDER BY, AND/OR, INTERSECT/UNION/EXCEPT, keywords) must match as a
set, and the FROM tables must be the same.

>>> exact_match("SELECT name FROM singer WHERE age > 30", "select Name from SINGER where age > 45")
True
>>> exact_match("SELECT name FROM singer ORDER BY age", "SELECT name FROM singer ORDER BY age DESC")
False
"""

from __future__ import annotations

from typing import Any

from ..db.schema import Schema
from ..errors import SQLParseError
from .spider_sql import WHERE_OPS, SpiderSQL, to_spider


def _fk_map(schema: Schema | None) -> dict[str, str]:
    """``table.column`` -> a representative of its foreign-key group (the official ``kmap``)."""
    if schema is None:
        return {}
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for fk in schema.foreign_keys:
        a = f"{fk.table.lower()}.{fk.column.lower()}"
        b = f"{fk.ref_table.lower()}.{fk.ref_column.lower()}"
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {k: find(k) for k in parent}


def _schema_lists(schema: Schema | None) -> dict[str, list[str]] | None:
    return None if schema is None else {t.name: list(t.column_names) for t in schema.tables}


class _Normalizer:
    """The official ``rebuild_sql_val`` + ``rebuild_sql_col`` with values and DISTINCT disabled."""

    def __init__(self, kmap: dict[str, str]) -> None:
        self.kmap = kmap

    def col(self, cu: Any) -> Any:
        if cu is None:
            return None
        agg, name, _distinct = cu
        return (agg, self.kmap.get(name, name), None)

    def val_unit(self, vu: Any) -> Any:
        if vu is None:
            return None
        op, c1, c2 = vu
        return (op, self.col(c1), self.col(c2))

    def cond(self, cu: Any) -> Any:
        not_op, op, vu, v1, v2 = cu
        v1 = self.sql(v1) if isinstance(v1, dict) else None
        v2 = self.sql(v2) if isinstance(v2, dict) else None
        return (not_op, op, self.val_unit(vu), v1, v2)

    def conds(self, items: list[Any]) -> list[Any]:
        return [self.cond(x) if i % 2 == 0 else x for i, x in enumerate(items)]

    def sql(self, s: SpiderSQL | None) -> SpiderSQL | None:
        if s is None:
            return None
        units = [(t, self.sql(u) if isinstance(u, dict) else u) for t, u in s["from"]["table_units"]]
        order = s["orderBy"]
        return {
            "select": (None, [(agg, self.val_unit(vu)) for agg, vu in s["select"][1]]),
            "from": {"table_units": units, "conds": self.conds(s["from"]["conds"])},
            "where": self.conds(s["where"]),
            "groupBy": [self.col(c) for c in s["groupBy"]],
            "having": self.conds(s["having"]),
            "orderBy": (order[0], [self.val_unit(v) for v in order[1]]) if order else [],
            "limit": s["limit"],
            "intersect": self.sql(s["intersect"]),
            "union": self.sql(s["union"]),
            "except": self.sql(s["except"]),
        }


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
    """Per-component match, as the official ``eval_partial_match`` (F1 == 1 for each)."""
    ps, ls = pred["select"][1], label["select"][1]
    pw, lw = pred["where"][::2], label["where"][::2]
    pg = [c[1].split(".")[-1] for c in pred["groupBy"]]
    lg = [c[1].split(".")[-1] for c in label["groupBy"]]
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


def _table_key(unit: tuple[str, Any]) -> str:
    return repr(unit)


def _exact(pred: SpiderSQL, label: SpiderSQL) -> bool:
    if not all(partial_match(pred, label).values()):
        return False
    if len(label["from"]["table_units"]) > 0:
        return sorted(label["from"]["table_units"], key=_table_key) == sorted(pred["from"]["table_units"], key=_table_key)
    return True


def exact_match(gold: str, pred: str, schema: Schema | None = None, dialect: str = "sqlite") -> bool:
    """Spider exact-set-match of ``pred`` against ``gold``; a prediction that cannot be parsed scores False."""
    lists = _schema_lists(schema)
    norm = _Normalizer(_fk_map(schema))
    label = norm.sql(to_spider(gold, dialect, lists))
    try:
        guess = norm.sql(to_spider(pred, dialect, lists))
    except SQLParseError:
        return False
    assert label is not None and guess is not None
    return _exact(guess, label)
