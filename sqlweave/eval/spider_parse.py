"""Spider's own SQL reader, reproduced rule for rule, for exact-set-match and hardness.

The official Spider evaluator (``taoyds/test-suite-sql-eval``, ``process_sql.py``) does not
use a SQL grammar: it splits the query into lower-cased word tokens (NLTK's Treebank word
tokenizer, after string literals have been set aside) and reads them with a small
recursive-descent parser that needs the database schema. Its verdicts depend on that
reader's limits, so sqlweave reproduces it exactly instead of approximating it with a
full SQL parser:

- a column must exist in the table it is qualified with (``cars_data.MakeId`` is rejected
  when ``cars_data`` has no ``MakeId``), and an unqualified column in one of the FROM tables;
- an alias may not have the name of a table of the database (``FROM pets AS student``);
- a ``LIMIT`` is always read as ``1`` (its value is never compared);
- any query the reader cannot follow (``CASE``, ``CAST``, functions other than the five
  aggregates, ``JOIN ... USING``, quoted identifiers...) is rejected.

Rejected predictions score 0 in exact-set-match, as in the official script.

The tokenizer is a copy of the rules of NLTK's ``NLTKWordTokenizer`` (what
``word_tokenize(s, preserve_line=True)`` runs), so no NLTK install or tokenizer data is needed.

>>> schema = {"singer": ["singer_id", "name", "age"]}
>>> sql = parse_spider("SELECT count(*) FROM singer WHERE age > 30", schema)
>>> sql["select"], sql["where"][0][:3]
((False, [(3, (0, (0, '__all__', False), None))]), (False, 3, (0, (0, '__singer.age__', False), None)))
>>> parse_spider("SELECT name FROM singer WHERE singer.country = 'x'", schema)  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
...
sqlweave.errors.SQLParseError: ...
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import SQLParseError

CLAUSE_KEYWORDS = ("select", "from", "where", "group", "order", "limit", "intersect", "union", "except")
JOIN_KEYWORDS = ("join", "on", "as")
WHERE_OPS = ("not", "between", "=", ">", "<", ">=", "<=", "!=", "in", "like", "is", "exists")
UNIT_OPS = ("none", "-", "+", "*", "/")
AGG_OPS = ("none", "max", "min", "count", "sum", "avg")
COND_OPS = ("and", "or")
SQL_OPS = ("intersect", "union", "except")
ORDER_OPS = ("desc", "asc")

SpiderSQL = dict[str, Any]
#: ``{table: [column, ...]}``, lower case, in the database's order (the official ``get_schema``).
SchemaDict = dict[str, list[str]]


class _Reject(Exception):
    """The official reader fails (an ``assert``, a missing key, an index past the end...)."""


def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise _Reject(msg)


# --- NLTK's NLTKWordTokenizer (word_tokenize with preserve_line=True) --------------------------

_STARTING_QUOTES = [
    (re.compile("([«“‘„]|[`]+)", re.U), r" \1 "),
    (re.compile(r"^\""), r"``"),
    (re.compile(r"(``)"), r" \1 "),
    (re.compile(r"([ \(\[{<])(\"|\'{2})"), r"\1 `` "),
    (re.compile(r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)", re.U), r"\1 "),
]
_ENDING_QUOTES = [
    (re.compile("([»”’])", re.U), r" \1 "),
    (re.compile(r"''"), " '' "),
    (re.compile(r'"'), " '' "),
    (re.compile(r"\s+"), " "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
]
_PUNCTUATION = [
    (re.compile(r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*+)\s*$", re.U), r"\1 \2 \3 "),
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}", re.U), r" \g<0> "),
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (re.compile(r"[\u2012-\u2015]", re.U), r" \g<0> "),
    (re.compile(r'([^\.])(\.)([\]\)}>"\']*)\s*$'), r"\1 \2\3 "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"[*]", re.U), r" \g<0> "),
]
_PARENS = (re.compile(r"[\]\[\(\)\{\}\<\>]"), r" \g<0> ")
_DOUBLE_DASHES = (re.compile(r"--"), r" -- ")
_CONTRACTIONS = [re.compile(p) for p in (
    r"(?i)\b(can)(?#X)(not)\b", r"(?i)\b(d)(?#X)('ye)\b", r"(?i)\b(gim)(?#X)(me)\b", r"(?i)\b(gon)(?#X)(na)\b",
    r"(?i)\b(got)(?#X)(ta)\b", r"(?i)\b(lem)(?#X)(me)\b", r"(?i)\b(more)(?#X)('n)\b", r"(?i)\b(wan)(?#X)(na)(?=\s)",
    r"(?i) ('t)(?#X)(is)\b", r"(?i) ('t)(?#X)(was)\b")]


def word_tokenize(text: str) -> list[str]:
    """NLTK's ``word_tokenize(text, preserve_line=True)``, without NLTK.

    >>> word_tokenize("select count(*) from t where a >= 1 and b>=2")
    ['select', 'count', '(', '*', ')', 'from', 't', 'where', 'a', '>', '=', '1', 'and', 'b', '>', '=2']
    """
    for regexp, sub in _STARTING_QUOTES + _PUNCTUATION + [_PARENS, _DOUBLE_DASHES]:
        text = regexp.sub(sub, text)
    text = " " + text + " "
    for regexp, sub in _ENDING_QUOTES:
        text = regexp.sub(sub, text)
    for regexp in _CONTRACTIONS:
        text = regexp.sub(r" \1 \2 ", text)
    return text.split()


def tokenize(string: str) -> list[str]:
    """The official ``tokenize``: string literals kept whole (``'`` turned into ``"``), the rest lower-cased.

    >>> tokenize("SELECT name FROM t WHERE a != 'Bob'")
    ['select', 'name', 'from', 't', 'where', 'a', '!=', '"Bob"']
    """
    string = str(string).replace("'", '"')
    quote_idxs = [i for i, ch in enumerate(string) if ch == '"']
    _need(len(quote_idxs) % 2 == 0, "Unexpected quote")
    vals = {}
    for i in range(len(quote_idxs) - 1, -1, -2):
        q1, q2 = quote_idxs[i - 1], quote_idxs[i]
        key = f"__val_{q1}_{q2}__"
        vals[key] = string[q1:q2 + 1]
        string = string[:q1] + key + string[q2 + 1:]
    toks = [w.lower() for w in word_tokenize(string)]
    toks = [vals.get(t, t) for t in toks]
    for eq_idx in reversed([i for i, t in enumerate(toks) if t == "="]):
        pre = toks[eq_idx - 1]
        if pre in ("!", ">", "<"):
            toks = toks[:eq_idx - 1] + [pre + "="] + toks[eq_idx + 1:]
    return toks


# --- the reader (process_sql.py) ------------------------------------------------------------


class _Schema:
    def __init__(self, schema: SchemaDict) -> None:
        self.schema = {k.lower(): [c.lower() for c in v] for k, v in schema.items()}
        self.id_map: dict[str, str] = {"*": "__all__"}
        for key, vals in self.schema.items():
            for val in vals:
                self.id_map[f"{key}.{val}"] = f"__{key}.{val}__"
        for key in self.schema:
            self.id_map[key] = f"__{key}__"


def _tables_with_alias(schema: _Schema, toks: list[str]) -> dict[str, str]:
    tables = {toks[i + 1]: toks[i - 1] for i, t in enumerate(toks) if t == "as"}
    for key in schema.schema:
        _need(key not in tables, f"Alias {key} has the same name in table")
        tables[key] = key
    return tables


class _Reader:
    def __init__(self, schema: _Schema, toks: list[str]) -> None:
        self.s = schema
        self.toks = toks
        self.tables = _tables_with_alias(schema, toks)

    def col(self, toks: list[str], idx: int, default_tables: list[str] | None) -> tuple[int, str]:
        tok = toks[idx]
        if tok == "*":
            return idx + 1, self.s.id_map[tok]
        if "." in tok:
            alias, col = tok.split(".")
            return idx + 1, self.s.id_map[self.tables[alias] + "." + col]
        _need(default_tables is not None and len(default_tables) > 0, "Default tables should not be None or empty")
        assert default_tables is not None
        for alias in default_tables:
            table = self.tables[alias]
            if tok in self.s.schema[table]:
                return idx + 1, self.s.id_map[table + "." + tok]
        raise _Reject(f"Error col: {tok}")

    def col_unit(self, toks: list[str], idx: int, default_tables: list[str] | None) -> tuple[int, Any]:
        len_ = len(toks)
        is_block = is_distinct = False
        if toks[idx] == "(":
            is_block = True
            idx += 1
        if toks[idx] in AGG_OPS:
            agg_id = AGG_OPS.index(toks[idx])
            idx += 1
            _need(idx < len_ and toks[idx] == "(", "(")
            idx += 1
            if toks[idx] == "distinct":
                idx += 1
                is_distinct = True
            idx, col_id = self.col(toks, idx, default_tables)
            _need(idx < len_ and toks[idx] == ")", ")")
            idx += 1
            return idx, (agg_id, col_id, is_distinct)
        if toks[idx] == "distinct":
            idx += 1
            is_distinct = True
        idx, col_id = self.col(toks, idx, default_tables)
        if is_block:
            _need(toks[idx] == ")", ")")
            idx += 1
        return idx, (0, col_id, is_distinct)

    def val_unit(self, toks: list[str], idx: int, default_tables: list[str] | None) -> tuple[int, Any]:
        len_ = len(toks)
        is_block = False
        if toks[idx] == "(":
            is_block = True
            idx += 1
        col_unit2 = None
        unit_op = 0
        idx, col_unit1 = self.col_unit(toks, idx, default_tables)
        if idx < len_ and toks[idx] in UNIT_OPS:
            unit_op = UNIT_OPS.index(toks[idx])
            idx += 1
            idx, col_unit2 = self.col_unit(toks, idx, default_tables)
        if is_block:
            _need(toks[idx] == ")", ")")
            idx += 1
        return idx, (unit_op, col_unit1, col_unit2)

    def table_unit(self, idx: int) -> tuple[int, str, str]:
        toks = self.toks
        key = self.tables[toks[idx]]
        idx += 3 if idx + 1 < len(toks) and toks[idx + 1] == "as" else 1
        return idx, self.s.id_map[key], key

    def value(self, idx: int, default_tables: list[str] | None) -> tuple[int, Any]:
        toks = self.toks
        len_ = len(toks)
        is_block = False
        if toks[idx] == "(":
            is_block = True
            idx += 1
        val: Any
        if toks[idx] == "select":
            idx, val = self.sql(idx)
        elif '"' in toks[idx]:
            val = toks[idx]
            idx += 1
        else:
            try:
                val = float(toks[idx])
                idx += 1
            except ValueError:
                end = idx
                while (end < len_ and toks[end] != "," and toks[end] != ")" and toks[end] != "and"
                       and toks[end] not in CLAUSE_KEYWORDS and toks[end] not in JOIN_KEYWORDS):
                    end += 1
                # The official reader passes the slice from the value's start (before any "(").
                start = idx - 1 if is_block else idx
                _, val = self.col_unit(toks[start:end], 0, default_tables)
                idx = end
        if is_block:
            _need(toks[idx] == ")", ")")
            idx += 1
        return idx, val

    def condition(self, idx: int, default_tables: list[str] | None) -> tuple[int, list[Any]]:
        toks = self.toks
        len_ = len(toks)
        conds: list[Any] = []
        while idx < len_:
            idx, val_unit = self.val_unit(toks, idx, default_tables)
            not_op = False
            if toks[idx] == "not":
                not_op = True
                idx += 1
            _need(idx < len_ and toks[idx] in WHERE_OPS, "Error condition")
            op_id = WHERE_OPS.index(toks[idx])
            idx += 1
            val2 = None
            if op_id == WHERE_OPS.index("between"):
                idx, val1 = self.value(idx, default_tables)
                _need(toks[idx] == "and", "and")
                idx += 1
                idx, val2 = self.value(idx, default_tables)
            else:
                idx, val1 = self.value(idx, default_tables)
            conds.append((not_op, op_id, val_unit, val1, val2))
            if idx < len_ and (toks[idx] in CLAUSE_KEYWORDS or toks[idx] in (")", ";") or toks[idx] in JOIN_KEYWORDS):
                break
            if idx < len_ and toks[idx] in COND_OPS:
                conds.append(toks[idx])
                idx += 1
        return idx, conds

    def select(self, idx: int, default_tables: list[str]) -> tuple[int, Any]:
        toks = self.toks
        len_ = len(toks)
        _need(toks[idx] == "select", "'select' not found")
        idx += 1
        is_distinct = False
        if idx < len_ and toks[idx] == "distinct":
            idx += 1
            is_distinct = True
        units = []
        while idx < len_ and toks[idx] not in CLAUSE_KEYWORDS:
            agg_id = 0
            if toks[idx] in AGG_OPS:
                agg_id = AGG_OPS.index(toks[idx])
                idx += 1
            idx, val_unit = self.val_unit(toks, idx, default_tables)
            units.append((agg_id, val_unit))
            if idx < len_ and toks[idx] == ",":
                idx += 1
        return idx, (is_distinct, units)

    def from_(self, start_idx: int) -> tuple[int, list[Any], list[Any], list[str]]:
        toks = self.toks
        _need("from" in toks[start_idx:], "'from' not found")
        len_ = len(toks)
        idx = toks.index("from", start_idx) + 1
        default_tables: list[str] = []
        table_units: list[Any] = []
        conds: list[Any] = []
        while idx < len_:
            is_block = False
            if toks[idx] == "(":
                is_block = True
                idx += 1
            if toks[idx] == "select":
                idx, sub = self.sql(idx)
                table_units.append(("sql", sub))
            else:
                if idx < len_ and toks[idx] == "join":
                    idx += 1
                idx, unit, name = self.table_unit(idx)
                table_units.append(("table_unit", unit))
                default_tables.append(name)
            if idx < len_ and toks[idx] == "on":
                idx += 1
                idx, this_conds = self.condition(idx, default_tables)
                if conds:
                    conds.append("and")
                conds.extend(this_conds)
            if is_block:
                _need(toks[idx] == ")", ")")
                idx += 1
            if idx < len_ and (toks[idx] in CLAUSE_KEYWORDS or toks[idx] in (")", ";")):
                break
        return idx, table_units, conds, default_tables

    def where(self, idx: int, default_tables: list[str], word: str = "where") -> tuple[int, list[Any]]:
        if idx >= len(self.toks) or self.toks[idx] != word:
            return idx, []
        return self.condition(idx + 1, default_tables)

    def group_by(self, idx: int, default_tables: list[str]) -> tuple[int, list[Any]]:
        toks = self.toks
        len_ = len(toks)
        units: list[Any] = []
        if idx >= len_ or toks[idx] != "group":
            return idx, units
        idx += 1
        _need(toks[idx] == "by", "by")
        idx += 1
        while idx < len_ and not (toks[idx] in CLAUSE_KEYWORDS or toks[idx] in (")", ";")):
            idx, unit = self.col_unit(toks, idx, default_tables)
            units.append(unit)
            if idx < len_ and toks[idx] == ",":
                idx += 1
            else:
                break
        return idx, units

    def order_by(self, idx: int, default_tables: list[str]) -> tuple[int, Any]:
        toks = self.toks
        len_ = len(toks)
        units: list[Any] = []
        order_type = "asc"
        if idx >= len_ or toks[idx] != "order":
            return idx, units
        idx += 1
        _need(toks[idx] == "by", "by")
        idx += 1
        while idx < len_ and not (toks[idx] in CLAUSE_KEYWORDS or toks[idx] in (")", ";")):
            idx, unit = self.val_unit(toks, idx, default_tables)
            units.append(unit)
            if idx < len_ and toks[idx] in ORDER_OPS:
                order_type = toks[idx]
                idx += 1
            if idx < len_ and toks[idx] == ",":
                idx += 1
            else:
                break
        return idx, (order_type, units)

    def limit(self, idx: int) -> tuple[int, int | None]:
        if idx < len(self.toks) and self.toks[idx] == "limit":
            # The official reader checks ``type(tok) != int`` on a string token: the value is always 1.
            return idx + 2, 1
        return idx, None

    def skip_semicolon(self, idx: int) -> int:
        while idx < len(self.toks) and self.toks[idx] == ";":
            idx += 1
        return idx

    def sql(self, start_idx: int) -> tuple[int, SpiderSQL]:
        toks = self.toks
        len_ = len(toks)
        idx = start_idx
        is_block = False
        if toks[idx] == "(":
            is_block = True
            idx += 1
        from_end, table_units, conds, default_tables = self.from_(start_idx)
        out: SpiderSQL = {"from": {"table_units": table_units, "conds": conds}}
        _, out["select"] = self.select(idx, default_tables)
        idx = from_end
        idx, out["where"] = self.where(idx, default_tables)
        idx, out["groupBy"] = self.group_by(idx, default_tables)
        idx, out["having"] = self.where(idx, default_tables, "having")
        idx, out["orderBy"] = self.order_by(idx, default_tables)
        idx, out["limit"] = self.limit(idx)
        idx = self.skip_semicolon(idx)
        if is_block:
            _need(toks[idx] == ")", ")")
            idx += 1
        idx = self.skip_semicolon(idx)
        for op in SQL_OPS:
            out[op] = None
        if idx < len_ and toks[idx] in SQL_OPS:
            op = toks[idx]
            idx, out[op] = self.sql(idx + 1)
        return idx, out


def parse_spider(sql: str, schema: SchemaDict) -> SpiderSQL:
    """The official ``get_sql(Schema(schema), sql)``; raise :class:`SQLParseError` where it fails.

    Column ids are the official ``__table.column__`` strings (``__all__`` for ``*``), tables
    ``__table__``.

    >>> parse_spider("select name from singer order by age desc limit 3", {"singer": ["name", "age"]})["limit"]
    1
    """
    try:
        toks = tokenize(sql)
        reader = _Reader(_Schema(schema), toks)
        return reader.sql(0)[1]
    except (_Reject, IndexError, KeyError, ValueError, TypeError, AttributeError, RecursionError) as err:
        raise SQLParseError(f"the Spider reader rejects this query ({type(err).__name__}: {err})", sql=sql) from None


def empty_sql() -> SpiderSQL:
    """What the official evaluator scores in place of a prediction its reader rejects."""
    return {"except": None, "from": {"conds": [], "table_units": []}, "groupBy": [], "having": [],
            "intersect": None, "limit": None, "orderBy": [], "select": [False, []], "union": None, "where": []}
