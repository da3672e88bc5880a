"""Follow a key a query shows with the name of the row it refers to, where the question asks for no ids.

The sixth rewrite of :mod:`sqlweave.sql.rewrite` (see its docstring), called on its own by a stage that runs after
any vote (:mod:`sqlweave.stages.name_keys`), since it changes the result's columns.
"""

from __future__ import annotations

import re
from functools import cache

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError

from ..errors import SqlweaveError
from ..schema import Schema, Table
from .repair import Repair as Rewrite
from .scopes import readable_selects
from .validate import parse_one

#: A column named as a key of another table (``manager_id``, ``CustomerID``, ``MakeId``; not ``paid``): the part
#: after the stem.
_KEY_NAME = re.compile(r"(?:[_ ][iI][dD]|I[dD])$")
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A question that asks for ids, in any of the languages it may be asked in.
_ASKS_FOR_IDS = re.compile(r"\bids?\b|identif|kennung|编号|編號|番号|\bnum(?:ber|éro|ero)s?\b|\bcodes?\b|\bkeys?\b",
                           re.IGNORECASE)


def _ident(name: str) -> exp.Identifier:
    """``name`` as an identifier, quoted when some dialect would read it otherwise (a keyword, a space)."""
    return exp.Identifier(this=name, quoted=not _PLAIN.fullmatch(name) or name.lower() in _reserved())


@cache
def _reserved() -> frozenset[str]:
    """Words some engine reserves (``order``, ``user``): quoted wherever a rule writes them as names."""
    return frozenset(w.lower() for d in ("sqlite", "postgres", "mysql", "duckdb")
                     for w in Dialect.get_or_raise(d).generator_class.RESERVED_KEYWORDS)


def _readable_columns(table: Table) -> list[str]:
    """The columns that name a row of ``table`` to a reader: ``name``, else its text columns ending in "name"
    (``first_name``, ``last_name``; three at most), else ``title``; none when it has neither."""
    texts = [c for c in table.columns if c.is_text and not c.primary_key and not _KEY_NAME.search(c.name)]
    exact = [c.name for c in texts if c.name.lower() == "name"]
    if exact:
        return exact
    named = [c.name for c in texts if c.name.lower().endswith("name")]
    return named[:3] or [c.name for c in texts if c.name.lower() == "title"][:1]


def _label(name: str, stem: str, outputs: set[str]) -> str | None:
    """The output name of ``name`` shown for a key named after ``stem`` (``manager_first_name``; ``concert_Name``
    as it is), one no output of the query has (None when four tries all are)."""
    base = name if name.lower().startswith(stem.lower()) else f"{stem}_{name}"
    return next((a for a in (base, f"{base}_2", f"{base}_3", f"{base}_4") if a.lower() not in outputs), None)


def _qualifier(table: exp.Table) -> exp.Identifier:
    """How columns of ``table`` are qualified: its alias, else its name, quoted as written or where needed."""
    written = table.args["alias"].this if table.args.get("alias") else table.this
    name = written.name
    return exp.Identifier(this=name, quoted=bool(written.args.get("quoted")) or _ident(name).args["quoted"])


def _name_keys(tree: exp.Expression, schema: Schema, question: str) -> str | None:
    """The key columns a query shows where the question asks for no ids, each followed by the name of the row
    it refers to (see the module docstring), or None. Changes ``tree`` in place."""
    if not isinstance(tree, exp.Select) or _ASKS_FOR_IDS.search(question) or tree.args.get("with_"):
        return None
    sel = next((s for s in readable_selects(tree, schema) if s.node is tree), None)
    if sel is None or any(isinstance(e.unalias(), exp.Star) for e in tree.expressions):
        return None
    if any(s is not tree for s in tree.find_all(exp.Select)):
        return None  # a subquery's unqualified names could come to mean the joined table's
    if tree.args.get("group") or tree.find(exp.AggFunc, exp.Window):
        return None  # a key that labels groups ("how many friends each student has") is not what is asked
    order = tree.args.get("order")
    if order is not None and any(not k.is_string for k in order.find_all(exp.Literal)):
        return None  # ORDER BY 2 would point at another column once names are added
    taken = {a.lower() for a in sel.tables} | {t.name.lower() for t in sel.tables.values()}
    outputs = {e.alias_or_name.lower() for e in tree.expressions}
    shown_columns = list(tree.expressions)  # with the names inserted after their keys; set on the tree at the end
    named: list[str] = []
    for position in range(len(shown_columns) - 1, -1, -1):
        col = shown_columns[position]
        alias = sel.owner.get(id(col)) if isinstance(col, exp.Column) else None
        if alias is None or not _KEY_NAME.search(col.name) or _KEY_NAME.fullmatch(col.name):
            continue  # a key of its own table ("id") names the row selected, not another one
        table = sel.tables[alias]
        key = next((f for f in schema.foreign_keys_of(table.name) if f.column.lower() == col.name.lower()), None)
        if key is None or not schema.has_table(key.ref_table):
            continue
        target = schema.table(key.ref_table)
        shown = _readable_columns(target)
        if target.primary_key != (target.column(key.ref_column).name,) or not shown:
            continue
        stem = _KEY_NAME.sub("", col.name).rstrip("_ ") or key.ref_table
        join_alias = next(a for a in (stem, f"{stem}_row", f"{stem}_row2", f"{stem}_row3", f"ref_{len(taken)}")
                          if a.lower() not in taken)
        labels = [_label(name, stem, outputs) for name in shown]
        if None in labels:
            continue
        taken.add(join_alias.lower())
        outputs.update(label.lower() for label in labels if label)
        for offset, (name, label) in enumerate(zip(shown, labels), start=1):
            column = exp.column(_ident(name), table=_ident(join_alias))
            shown_columns.insert(position + offset, exp.alias_(column, _ident(str(label))))
        on = exp.EQ(this=exp.column(_ident(key.ref_column), table=_ident(join_alias)),
                    expression=exp.column(col.this.copy(), table=_qualifier(sel.written[alias])))
        source: exp.Expr = exp.Table(this=_ident(target.name))
        if join_alias != target.name:
            source = exp.alias_(source, _ident(join_alias), table=True)
        tree.join(source, on=on, join_type="left", copy=False)
        named.append(f"{sel.written[alias].alias_or_name}.{col.name} ({', '.join(shown)} of {target.name})")
    if not named:
        return None
    for c in sel.scope.columns:  # the joined table may share a name the query leaves unqualified
        owner = sel.owner.get(id(c))
        if owner is not None and not c.table:
            c.set("table", _qualifier(sel.written[owner]))
    tree.set("expressions", shown_columns)
    return "named the rows the keys " + ", ".join(reversed(named)) + " refer to (the question asks for no ids)"


def name_keys(sql: str, schema: Schema, question: str, dialect: str = "sqlite") -> Rewrite:
    """``sql`` with each key it shows followed by the name of the row it refers to, where the question asks for
    no ids (see the module docstring); ``changes`` is empty (and ``sql`` unchanged) when no key is named.

    >>> from sqlweave.schema import Schema, Table, Column, ForeignKey
    >>> s = Schema("x", (Table("singer", (Column("singer_id", primary_key=True), Column("name"))),
    ...                  Table("song", (Column("song_id", primary_key=True), Column("singer_id"), Column("title")))),
    ...            (ForeignKey("song", "singer_id", "singer", "singer_id"),))
    >>> name_keys("SELECT title, singer_id FROM song", s, "Which songs, and by whom?").sql
    'SELECT song.title, song.singer_id, singer.name AS singer_name FROM song LEFT JOIN singer ON singer.singer_id = song.singer_id'
    >>> name_keys("SELECT title, singer_id FROM song", s, "Song titles and singer ids").changed
    False
    """
    try:
        tree = parse_one(sql, dialect)
        named = _name_keys(tree, schema, question)
        return Rewrite(tree.sql(dialect=dialect), [named]) if named else Rewrite(sql)
    except (SqlglotError, SqlweaveError, RecursionError):  # as in rewrite_query: no rewrite for sure
        return Rewrite(sql)
